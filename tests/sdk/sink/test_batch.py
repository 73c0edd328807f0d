"""The handler's part of a batch transaction, on SQLite: savepoints, isolation, DLQ or stop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sdk.consumer._failure import FailurePath
from sdk.errors import HandlerError, SerializationError
from sdk.profiles import ConsumerProfile, FailurePolicy
from sdk.sink import SinkStats, Transaction, sqlite
from sdk.sink._batch import BatchBody, Transient
from sdk.sink._database import Session
from sdk.testing.fakes import FakeMessage


def body(policy: FailurePolicy, value: str = "bytes") -> tuple[BatchBody, SinkStats]:
    profile = ConsumerProfile(
        guarantee="exactly_once", bootstrap_servers="x:1", group_id="g", failure=policy
    )
    stats = SinkStats()
    failure = FailurePath(profile, stats, "bytes", value, None)
    return BatchBody(failure, lambda: setattr(stats, "retries", stats.retries + 1)), stats


def session(tmp_path: Path) -> Session:
    s = sqlite(str(tmp_path / "b.db")).session()
    s.transaction.execute("CREATE TABLE out (v TEXT)")
    s.begin()
    return s


class Restarts:
    """The sink's restart: roll back and begin again (no positions in these tests)."""

    def __init__(self, s: Session) -> None:
        self.session, self.count = s, 0

    def __call__(self) -> None:
        self.count += 1
        self.session.rollback()
        self.session.begin()


def messages(*values: bytes) -> list[Any]:
    return [FakeMessage("t", 0, i, v) for i, v in enumerate(values)]


def written(s: Session) -> list[str]:
    return [v for (v,) in s.transaction.execute("SELECT v FROM out ORDER BY rowid").fetchall()]


def insert(record: Any, tx: Transaction) -> None:
    if record.value == b"bad":
        tx.execute("INSERT INTO out VALUES ('partial')")  # rolled back with its savepoint
        raise ValueError("bad record")
    tx.execute("INSERT INTO out VALUES (?)", (record.value.decode(),))


def test_a_failing_record_is_stopped_and_its_writes_undone(tmp_path: Path) -> None:
    b, _ = body(FailurePolicy(attempts=1, on_failure="stop"))
    s = session(tmp_path)
    with pytest.raises(HandlerError):
        b.write(s, insert, messages(b"a", b"bad", b"c"), per_record=True, restart=Restarts(s))
    assert "partial" not in written(s)


def test_isolation_writes_the_good_records_once_and_retries_the_bad_one(tmp_path: Path) -> None:
    b, stats = body(FailurePolicy(attempts=3, backoff_initial_ms=1, backoff_max_ms=2))
    s = session(tmp_path)
    calls: list[bytes] = []
    flaky = {"left": 2}

    def handler(record: Any, tx: Transaction) -> None:
        calls.append(record.value)
        if record.value == b"b" and flaky["left"]:
            flaky["left"] -= 1
            tx.execute("INSERT INTO out VALUES ('partial')")
            raise ValueError("flaky")
        tx.execute("INSERT INTO out VALUES (?)", (record.value.decode(),))

    restarts = Restarts(s)
    b.write(s, handler, messages(b"a", b"b", b"c"), per_record=True, restart=restarts)
    assert written(s) == ["a", "b", "c"]  # first pass undone; record by record, retried
    assert stats.handled == 3 and stats.retries == 1 and restarts.count == 1


def test_a_batch_handler_is_retried_whole_before_record_by_record(tmp_path: Path) -> None:
    b, _ = body(FailurePolicy(attempts=2, backoff_initial_ms=1, on_failure="stop"))
    s = session(tmp_path)
    seen: list[int] = []

    def handler(records: list[Any], tx: Transaction) -> None:
        seen.append(len(records))
        for record in records:
            insert(record, tx)

    restarts = Restarts(s)
    with pytest.raises(HandlerError):
        b.write(s, handler, messages(b"a", b"bad", b"c"), per_record=False, restart=restarts)
    assert restarts.count == 2  # after the first pass, after the whole-batch retry
    assert seen == [3, 3, 1, 1, 1]  # whole batch twice, then a alone, bad twice: stops
    assert written(s) == ["a"]  # the caller rolls the transaction back


def test_a_poison_pill_stops_without_running_the_handler(tmp_path: Path) -> None:
    b, _ = body(FailurePolicy(attempts=1, on_failure="stop"), value="json")
    s = session(tmp_path)
    with pytest.raises(SerializationError):
        b.write(s, insert, messages(b"{not json"), per_record=True, restart=Restarts(s))
    assert written(s) == []


def test_a_lost_database_inside_the_handler_is_not_a_handler_failure(tmp_path: Path) -> None:
    import sqlite3

    b, stats = body(FailurePolicy(attempts=5, backoff_initial_ms=1))
    s = session(tmp_path)

    def locked(record: Any, tx: Transaction) -> None:
        raise sqlite3.OperationalError("database is locked")

    with pytest.raises(Transient):
        b.write(s, locked, messages(b"a"), per_record=True, restart=Restarts(s))
    assert stats.retries == 0 and stats.handler_failures == 0 and stats.dead_lettered == 0
