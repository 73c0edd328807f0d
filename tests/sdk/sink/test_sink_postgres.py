"""The database sink on a real PostgreSQL: sync and asyncio, a frozen owner's locks, a restart."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import psycopg
import pytest

from sdk.aio import AsyncDatabaseSink, AsyncTransaction, async_postgresql
from sdk.sink import DatabaseSink, Transaction, postgresql
from sdk.testing.postgres import PostgresServer
from tests.sdk.consumer._support import profile, seed

pytestmark = pytest.mark.broker

OUT = "CREATE TABLE IF NOT EXISTS out (part INT, off BIGINT, value TEXT)"


def write(records: list[Any], tx: Transaction) -> None:
    tx.executemany(
        "INSERT INTO out (part, off, value) VALUES (%s, %s, %s)",
        [(r.partition, r.offset, r.value.decode()) for r in records],
    )


def values(uri: str) -> list[int]:
    with psycopg.connect(uri) as db:
        db.execute(OUT)
        return sorted(int(v) for (v,) in db.execute("SELECT value FROM out").fetchall())


def positions(uri: str, group: str) -> dict[int, tuple[int | None, int]]:
    with psycopg.connect(uri) as db:
        rows = db.execute(
            "SELECT kafka_partition, next_offset, epoch FROM kafka_sink_positions "
            "WHERE group_id = %s",
            (group,),
        ).fetchall()
    return {p: (n, e) for p, n, e in rows}


@pytest.fixture
def topic_of(kafka_cluster: Any, make_topic: Any, make_group: Any, postgres_uri: str) -> Any:
    def factory(count: int, partitions: int = 2) -> tuple[str, str, str, str]:
        bs = kafka_cluster.bootstrap_servers
        topic = make_topic(partitions)
        seed(bs, topic, count)
        with psycopg.connect(postgres_uri) as db:
            db.execute(OUT)
        return bs, topic, make_group(), postgres_uri

    return factory


def test_each_record_once_in_postgresql(topic_of: Any) -> None:
    bs, topic, group, uri = topic_of(5_000)
    with DatabaseSink(profile(bs, "exactly_once", group), [topic], postgresql(uri)) as sink:
        stats = sink.run_batch(write, max_records=5_000, idle_timeout_s=10)
    assert values(uri) == list(range(5_000))
    assert stats.fenced == 0 and stats.transactions >= 10
    assert sum(n for n, _ in positions(uri, group).values()) == 5_000


def test_asyncio_sink_on_the_same_core(topic_of: Any) -> None:
    bs, topic, group, uri = topic_of(2_000)

    async def write_async(records: list[Any], tx: AsyncTransaction) -> None:
        await tx.executemany(
            "INSERT INTO out (part, off, value) VALUES (%s, %s, %s)",
            [(r.partition, r.offset, r.value.decode()) for r in records],
        )

    async def main() -> Any:
        prof = profile(bs, "exactly_once", group, batch_size=200)
        async with AsyncDatabaseSink(prof, [topic], async_postgresql(uri)) as sink:
            return await sink.run_batch(write_async, max_records=2_000, idle_timeout_s=10)

    stats = asyncio.run(main())
    assert values(uri) == list(range(2_000))
    assert stats.transactions >= 10 and stats.claims >= 1
    assert sum(n for n, _ in positions(uri, group).values()) == 2_000


def test_a_former_owner_frozen_inside_its_transaction_is_bounded(topic_of: Any) -> None:
    """A member frozen holding the positions row's lock does not stall the new owner forever:
    the server ends the frozen session (idle_in_transaction_session_timeout), the new owner's
    claim (waiting in lock_timeout steps) gets through, and the frozen member's commit fails."""
    bs, topic, group, uri = topic_of(1_000, partitions=1)
    prof = profile(bs, "exactly_once", group, batch_size=100)
    with DatabaseSink(prof, [topic], postgresql(uri)) as first:
        first.run_batch(write, max_records=300, idle_timeout_s=10)
    ((next_offset, epoch),) = positions(uri, group).values()
    # the "zombie": a session inside a batch transaction, holding the row lock, then frozen
    zombie = psycopg.connect(uri, options="-c idle_in_transaction_session_timeout=3000")
    zombie.execute(
        "UPDATE kafka_sink_positions SET next_offset = %s WHERE group_id = %s AND epoch = %s",
        (next_offset + 100, group, epoch),
    )
    zombie.execute("INSERT INTO out (part, off, value) VALUES (0, -1, '-1')")
    started = time.monotonic()
    database = postgresql(uri, lock_timeout_s=0.5)
    with DatabaseSink(prof, [topic], database) as owner:
        stats = owner.run_batch(write, idle_timeout_s=5)
    waited = time.monotonic() - started
    assert stats.database_retries >= 1  # the claim met the lock, and retried
    assert waited < 30
    with pytest.raises(psycopg.errors.IdleInTransactionSessionTimeout):
        zombie.execute("COMMIT")
    zombie.close()
    assert values(uri) == list(range(1_000))  # the zombie's row never became visible
    assert positions(uri, group)[0] == (1_000, epoch + 1)


def test_a_database_restart_mid_run_loses_and_duplicates_nothing(
    topic_of: Any, postgres: PostgresServer
) -> None:
    bs, topic, group, uri = topic_of(20_000)
    prof = profile(bs, "exactly_once", group, batch_size=200)
    sink = DatabaseSink(prof, [topic], postgresql(uri), retry_timeout_s=60)
    result: dict[str, Any] = {}

    def slow(records: list[Any], tx: Transaction) -> None:
        write(records, tx)
        time.sleep(0.01)

    def consume() -> None:
        try:
            result["stats"] = sink.run_batch(slow, idle_timeout_s=8)
        except BaseException as exc:
            result["error"] = exc

    worker = threading.Thread(target=consume)
    worker.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(values(uri)) < 3_000:
        time.sleep(0.2)
    postgres.restart("immediate")
    worker.join(120)
    sink.close()
    assert "error" not in result, result.get("error")
    assert result["stats"].database_retries >= 1
    assert values(uri) == list(range(20_000))


@pytest.mark.postgres
def test_one_statement_advances_several_partitions_and_names_the_fenced(postgres_uri: str) -> None:
    db = postgresql(postgres_uri)
    mine = db.session()
    mine.claim("g", [("t", 0), ("t", 1), ("t", 2)])
    db.session().claim("g", [("t", 1)])  # another member took partition 1
    ends = {("t", 0): 5, ("t", 1): 6, ("t", 2): 7}
    assert mine.advance("g", ends, dict.fromkeys(ends, 1)) == [("t", 1)]
    mine.rollback()
    mine.begin()
    assert mine.advance("g", {("t", 0): 5, ("t", 2): 7}, {("t", 0): 1, ("t", 2): 1}) == []
    mine.commit()
    assert positions(postgres_uri, "g") == {0: (5, 1), 1: (None, 2), 2: (7, 1)}


@pytest.mark.postgres
def test_sinks_starting_together_all_find_the_table(postgres_uri: str) -> None:
    """PostgreSQL's CREATE TABLE IF NOT EXISTS races with itself; every starter must go on."""
    for round_ in range(5):
        table = f"positions_{round_}"
        barrier = threading.Barrier(4)
        errors: list[BaseException] = []

        def start(
            name: str = table,
            gate: threading.Barrier = barrier,
            errors: list[BaseException] = errors,
        ) -> None:
            gate.wait()
            try:
                postgresql(postgres_uri, positions_table=name).session().close()
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=start) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert errors == [], errors
