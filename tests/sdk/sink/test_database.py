"""The positions table on a real SQLite file: claims, fenced advances, shape checks, errors."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from sdk.errors import ConfigurationError, DatabaseError, DatabaseUnavailableError
from sdk.sink import DIALECTS, Database, Dialect, sqlite
from sdk.sink._database import Position
from sdk.sink._dialects import resolve_dialect


def test_claims_bump_the_epoch_and_keep_the_position(tmp_path: Path) -> None:
    db = sqlite(str(tmp_path / "p.db"))
    session = db.session()
    first = session.claim("g", [("t", 0), ("t", 1)])
    assert first == {("t", 0): Position(None, 1), ("t", 1): Position(None, 1)}
    session.begin()
    assert session.advance("g", {("t", 0): 10, ("t", 1): 7}, {("t", 0): 1, ("t", 1): 1}) == []
    session.commit()
    again = db.session().claim("g", [("t", 0)])
    assert again == {("t", 0): Position(10, 2)}
    assert session.read("g")[("t", 1)] == Position(7, 1)
    assert session.read("other") == {}


def test_an_advance_under_an_old_epoch_is_fenced_and_changes_nothing(tmp_path: Path) -> None:
    db = sqlite(str(tmp_path / "p.db"))
    old = db.session()
    old.claim("g", [("t", 0)])
    db.session().claim("g", [("t", 0)])  # the new owner: epoch 2
    old.begin()
    assert old.advance("g", {("t", 0): 99}, {("t", 0): 1}) == [("t", 0)]
    old.rollback()
    assert old.read("g") == {("t", 0): Position(None, 2)}


def test_a_second_process_waits_for_the_write_lock_then_fails_transiently(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    sqlite(str(path)).session().claim("g", [("t", 0)])
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(DatabaseUnavailableError, match="locked"):
            sqlite(str(path), busy_timeout_s=0.2).session().claim("g", [("t", 0)])
    finally:
        holder.execute("ROLLBACK")


def test_an_existing_table_of_another_shape_is_never_altered(tmp_path: Path) -> None:
    path = tmp_path / "p.db"
    with sqlite3.connect(path) as raw:
        raw.execute("CREATE TABLE kafka_sink_positions (id INTEGER)")
    with pytest.raises(DatabaseError, match="never alters"):
        sqlite(str(path)).session()
    with sqlite3.connect(path) as raw:
        columns = [row[1] for row in raw.execute("PRAGMA table_info(kafka_sink_positions)")]
    assert columns == ["id"]


def test_a_missing_table_without_create_table_names_the_fix(tmp_path: Path) -> None:
    path = str(tmp_path / "p.db")
    db = Database(lambda: sqlite3.connect(path, isolation_level=None), "sqlite", create_table=False)
    with pytest.raises(DatabaseError, match="create_table=False"):
        db.session()


def test_a_refused_connection_is_unavailable() -> None:
    def refuse() -> None:
        raise OSError("connection refused")

    with pytest.raises(DatabaseUnavailableError, match="connection refused"):
        Database(refuse, "sqlite").session()


@pytest.mark.parametrize("name", ["kafka positions", "x;DROP TABLE y", "1abc", ""])
def test_the_table_name_must_be_an_identifier(name: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        Database(lambda: None, "sqlite", positions_table=name)
    assert err.value.field == "positions_table"


def test_dialects_by_name_and_a_custom_one() -> None:
    assert resolve_dialect("postgres") is DIALECTS["postgresql"]
    assert resolve_dialect("sqlite3") is DIALECTS["sqlite"]
    with pytest.raises(ConfigurationError, match="valid: postgresql, sqlite"):
        resolve_dialect("oracle")
    mine = Dialect(name="duck", placeholder="?", create="CREATE TABLE {table} (x INT)")
    assert resolve_dialect(mine) is mine
    assert mine.sql(mine.advance, "pos").count("?") == 5


def test_transient_errors_per_dialect() -> None:
    lite = DIALECTS["sqlite"]
    assert lite.is_transient(sqlite3.OperationalError("database is locked"))
    assert not lite.is_transient(sqlite3.OperationalError("no such table: out"))
    assert not lite.is_transient(ValueError("handler bug"))
    psycopg = pytest.importorskip("psycopg")
    pg = DIALECTS["postgresql"]
    assert pg.is_transient(psycopg.OperationalError("server closed the connection"))
    assert pg.is_transient(psycopg.errors.IdleInTransactionSessionTimeout("ended"))
    assert not pg.is_transient(psycopg.errors.UniqueViolation("duplicate key"))
