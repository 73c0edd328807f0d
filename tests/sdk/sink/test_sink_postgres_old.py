"""The sink on a PostgreSQL without ``transaction_timeout`` (16 and older): what bounds a
frozen member there. Runs on Debian's PostgreSQL 15 server where the machine has it
(``/usr/lib/postgresql/15``), started as the ``postgres`` OS user on a unix socket."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from sdk.errors import DatabaseUnavailableError
from sdk.sink import postgresql
from sdk.sink._connection import SinkConnection
from sdk.sink._records import SinkStats

BIN = Path("/usr/lib/postgresql/15/bin")

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.skipif(
        not (BIN / "postgres").exists() or os.geteuid() != 0 or shutil.which("runuser") is None,
        reason="needs Debian's postgresql-15 server and root (to run it as the postgres user)",
    ),
]


@pytest.fixture(scope="module")
def old_uri() -> Iterator[str]:
    # not under pytest's tmp_path: its root is private to root, the server's user cannot enter
    base = Path(tempfile.mkdtemp(prefix="ksem-pg15-"))
    shutil.chown(base, "postgres")
    data, port = base / "data", 55_000 + os.getpid() % 1_000

    def as_postgres(*command: str) -> None:
        subprocess.run(
            ["runuser", "-u", "postgres", "--", *command],
            check=True,
            capture_output=True,
            timeout=60,
        )

    as_postgres(str(BIN / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres")
    as_postgres(
        str(BIN / "pg_ctl"),
        "-D",
        str(data),
        "-l",
        str(base / "log"),
        "-w",
        "-o",
        f"-p {port} -k {base} -c listen_addresses=",
        "start",
    )
    uri = f"postgresql://postgres@/postgres?host={base}&port={port}"
    with psycopg.connect(uri, autocommit=True) as db:
        db.execute("CREATE TABLE out (a INT)")
    try:
        yield uri
    finally:
        as_postgres(str(BIN / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(base, ignore_errors=True)


def test_the_sinks_executemany_is_bounded_a_raw_pipeline_is_not(old_uri: str) -> None:
    database = postgresql(old_uri, transaction_timeout_s=2, idle_in_transaction_timeout_s=2)
    session = database.session("ksem-sink g h:1")
    assert session.info.server_version // 10_000 == 15 and not session.info.bounded
    assert session.transaction.rearm == "SELECT 1"
    # through the sink's Transaction: the idle timeout is re-armed, the server ends the session
    session.begin()
    session.transaction.executemany("INSERT INTO out VALUES (%s)", [(1,), (2,)])
    time.sleep(4)
    with pytest.raises(DatabaseUnavailableError, match="IdleInTransactionSessionTimeout"):
        session.commit()
    session.close()
    # psycopg's executemany on a cursor of the handler's own: nothing ends the frozen session
    raw = database.session("ksem-sink g h:1")
    raw.begin()
    raw.transaction.cursor.executemany("INSERT INTO out VALUES (%s)", [(3,), (4,)])
    time.sleep(4)
    raw.commit()  # went through: PostgreSQL 16 and older leave this case unbounded
    raw.close()


def test_end_frozen_holders_ends_a_frozen_member_of_the_group(old_uri: str) -> None:
    frozen = postgresql(old_uri, transaction_timeout_s=2).session("ksem-sink g h:1")
    frozen.claim("g", [("t", 0)])
    frozen.begin()
    assert frozen.advance("g", {("t", 0): 5}, {("t", 0): 1}) == []
    frozen.transaction.cursor.executemany("INSERT INTO out VALUES (%s)", [(5,), (6,)])
    began = time.monotonic()
    stats = SinkStats()
    owner = SinkConnection(
        postgresql(old_uri, transaction_timeout_s=2, end_frozen_holders=True, lock_timeout_s=0.5),
        stats,
        60.0,
        "ksem-sink g h:2",
    )
    claims = owner.retrying(lambda s: s.claim("g", [("t", 0)]), lambda: False)
    waited = time.monotonic() - began
    owner.close()
    assert claims[("t", 0)].epoch == 2
    assert stats.holders_ended == 1 and stats.lock_waits >= 1
    assert "ksem-sink g h:1" in stats.blocked_by
    assert 2.0 <= waited < 2.0 + 0.5 + 2.0, waited  # the bound, one lock step, a margin
    with pytest.raises(DatabaseUnavailableError):
        frozen.commit()  # its session was ended: nothing of its batch is committed
    frozen.close()
    with psycopg.connect(old_uri) as db:
        assert db.execute("SELECT count(*) FROM out WHERE a IN (5, 6)").fetchone() == (0,)


def test_another_groups_frozen_member_is_left_alone(old_uri: str) -> None:
    frozen = postgresql(old_uri).session("ksem-sink other-group h:1")
    frozen.claim("g2", [("t", 0)])
    frozen.begin()
    frozen.advance("g2", {("t", 0): 5}, {("t", 0): 1})
    time.sleep(2.2)
    stats = SinkStats()
    owner = SinkConnection(
        postgresql(old_uri, transaction_timeout_s=2, end_frozen_holders=True, lock_timeout_s=0.5),
        stats,
        2.0,
        "ksem-sink g2 h:2",
    )
    with pytest.raises(DatabaseUnavailableError):
        owner.retrying(lambda s: s.claim("g2", [("t", 0)]), lambda: False)
    owner.close()
    assert stats.holders_ended == 0 and "other-group" in stats.blocked_by
    frozen.commit()  # untouched
    frozen.close()
