"""The database sink on SQLite against a real broker: commit order, resume, fencing, failures."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer as RawConsumer
from confluent_kafka import TopicPartition

from sdk.errors import DatabaseError, HandlerError
from sdk.profiles import FailurePolicy
from sdk.sink import DatabaseSink, Transaction, sqlite
from tests.sdk.consumer._support import committed, profile, read_topic, seed

pytestmark = pytest.mark.broker

TABLE = "CREATE TABLE IF NOT EXISTS out (topic TEXT, part INTEGER, off INTEGER, value TEXT)"


def insert(record: Any, tx: Transaction) -> None:
    tx.execute("CREATE TABLE IF NOT EXISTS out (topic TEXT, part INTEGER, off INTEGER, value TEXT)")
    tx.execute(
        "INSERT INTO out VALUES (?, ?, ?, ?)",
        (record.topic, record.partition, record.offset, record.value.decode()),
    )


def rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as db:
        db.execute(TABLE)
        return db.execute("SELECT topic, part, off, value FROM out ORDER BY part, off").fetchall()


def positions(path: Path, group: str) -> dict[int, tuple[int | None, int]]:
    with sqlite3.connect(path) as db:
        found = db.execute(
            "SELECT kafka_partition, next_offset, epoch FROM kafka_sink_positions "
            "WHERE group_id = ?",
            (group,),
        ).fetchall()
    return {p: (n, e) for p, n, e in found}


@pytest.fixture
def setup(kafka_cluster: Any, make_topic: Any, make_group: Any, tmp_path: Path) -> Any:
    def factory(count: int, partitions: int = 3) -> tuple[str, str, str, Path]:
        bs = kafka_cluster.bootstrap_servers
        topic = make_topic(partitions)
        seed(bs, topic, count)
        return bs, topic, make_group(), tmp_path / "out.db"

    return factory


def test_each_record_once_with_positions_in_the_database(setup: Any) -> None:
    bs, topic, group, path = setup(3_000)
    with DatabaseSink(profile(bs, "exactly_once", group), [topic], sqlite(str(path))) as sink:
        stats = sink.run(insert, max_records=3_000, idle_timeout_s=10)
    out = rows(path)
    assert sorted(int(v) for *_, v in out) == list(range(3_000))
    assert stats.handled == 3_000 and stats.transactions >= 1 and stats.fenced == 0
    ends = {p: n for p, (n, _) in positions(path, group).items()}
    per_partition = {p: sum(1 for r in out if r[1] == p) for p in range(3)}
    assert ends == per_partition  # next offset of each partition = records in it
    # the advisory Kafka commit follows the database commit
    assert sorted(committed(bs, group, topic, 3)) == sorted(per_partition.values())


def test_resumes_from_the_database_not_from_kafka(setup: Any) -> None:
    bs, topic, group, path = setup(2_000, partitions=1)
    prof = profile(bs, "exactly_once", group, batch_size=100)
    with DatabaseSink(prof, [topic], sqlite(str(path))) as sink:
        sink.run(insert, max_records=700, idle_timeout_s=10)
    # Kafka's committed offset is moved back to 0 by an outside client: not the source of truth
    raw = RawConsumer({"bootstrap.servers": bs, "group.id": group})
    raw.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    raw.close()
    with DatabaseSink(prof, [topic], sqlite(str(path))) as sink:
        sink.run(insert, idle_timeout_s=5)
    values = [int(v) for *_, v in rows(path)]
    assert sorted(values) == list(range(2_000))  # no record twice, none missing
    assert positions(path, group)[0] == (2_000, 2)  # two claims: epoch 2


def test_a_member_whose_partition_was_claimed_is_fenced(setup: Any) -> None:
    bs, topic, group, path = setup(1_000, partitions=1)
    prof = profile(bs, "exactly_once", group, batch_size=100)
    with DatabaseSink(prof, [topic], sqlite(str(path))) as sink:
        sink.run(insert, max_records=300, idle_timeout_s=10)
        before = positions(path, group)[0]
        # another member claims the partition (as a new owner would after a rebalance)
        with sqlite3.connect(path) as db:
            db.execute(
                "UPDATE kafka_sink_positions SET epoch = epoch + 1 WHERE group_id = ?", (group,)
            )
        stats = sink.run(insert, max_records=200, idle_timeout_s=3)
        assert stats.fenced == 1
        assert sink.assignment == []  # the claim is gone until the group assigns it again
    assert positions(path, group)[0] == (before[0], before[1] + 1)  # nothing advanced
    assert len(rows(path)) == 300  # the fenced batch wrote nothing


def test_poison_record_is_dead_lettered_and_the_rest_of_the_batch_commits(
    setup: Any, make_topic: Any
) -> None:
    bs, topic, group, path = setup(500, partitions=1)
    dlq = make_topic(1)
    failure = FailurePolicy(attempts=2, backoff_initial_ms=1, on_failure="dlq", dlq_topic=dlq)
    prof = profile(bs, "exactly_once", group, batch_size=100, failure=failure)

    def handler(records: list[Any], tx: Transaction) -> None:
        for record in records:
            if record.value == b"123":
                raise ValueError("poison")
            insert(record, tx)

    with DatabaseSink(prof, [topic], sqlite(str(path))) as sink:
        stats = sink.run_batch(handler, max_records=500, idle_timeout_s=10)
    values = sorted(int(v) for *_, v in rows(path))
    assert values == [i for i in range(500) if i != 123]
    assert stats.dead_lettered == 1 and stats.handler_failures == 1
    assert [m.value() for m in read_topic(bs, dlq, 1)] == [b"123"]
    assert positions(path, group)[0][0] == 500


def test_stop_policy_rolls_the_batch_back_and_a_rerun_finishes_it(setup: Any) -> None:
    bs, topic, group, path = setup(300, partitions=1)
    failure = FailurePolicy(attempts=1, on_failure="stop")
    prof = profile(bs, "exactly_once", group, batch_size=100, failure=failure)

    def failing(record: Any, tx: Transaction) -> None:
        if record.value == b"150":
            raise ValueError("boom")
        insert(record, tx)

    with DatabaseSink(prof, [topic], sqlite(str(path))) as sink:
        with pytest.raises(HandlerError):
            sink.run(failing, idle_timeout_s=10)
        committed_at = positions(path, group)[0][0]
        assert committed_at is not None and committed_at <= 150
        assert len(rows(path)) == committed_at  # the failed batch left nothing
        sink.run(insert, idle_timeout_s=3)  # the same sink, after the error
    assert sorted(int(v) for *_, v in rows(path)) == list(range(300))


def test_a_positions_table_of_another_shape_is_refused(setup: Any) -> None:
    bs, topic, group, path = setup(10, partitions=1)
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE kafka_sink_positions (group_id TEXT, topic TEXT, off INTEGER)")
    sink = DatabaseSink(profile(bs, "exactly_once", group), [topic], sqlite(str(path)))
    with sink, pytest.raises(DatabaseError, match="never alters"):
        sink.run(insert, idle_timeout_s=3)


def test_at_least_once_commits_to_kafka_after_the_database(setup: Any) -> None:
    bs, topic, group, path = setup(1_000, partitions=2)
    with DatabaseSink(profile(bs, "at_least_once", group), [topic], sqlite(str(path))) as sink:
        stats = sink.run(insert, max_records=1_000, idle_timeout_s=10)
    assert sorted(int(v) for *_, v in rows(path)) == list(range(1_000))
    assert stats.commits >= 1 and positions(path, group) == {}
    assert sum(committed(bs, group, topic, 2)) == 1_000


def test_a_fenced_partition_handed_back_is_read_again(setup: Any, make_topic: Any) -> None:
    """librdkafka keeps a paused partition paused across a rebalance: the claim resumes it."""
    bs, topic, group, path = setup(600, partitions=1)
    prof = profile(bs, "exactly_once", group, batch_size=100)
    with DatabaseSink(prof, [topic], sqlite(str(path))) as sink:
        sink.run(insert, max_records=200, idle_timeout_s=10)
        with sqlite3.connect(path) as db:
            db.execute(
                "UPDATE kafka_sink_positions SET epoch = epoch + 1 WHERE group_id = ?", (group,)
            )
        assert sink.run(insert, max_records=100, idle_timeout_s=3).fenced == 1
        # another member joins (on another topic): the group rebalances, the partition returns
        other = RawConsumer(
            {"bootstrap.servers": bs, "group.id": group, "session.timeout.ms": 6000}
        )
        other.subscribe([make_topic(1)])
        try:
            deadline = time.monotonic() + 30
            while sink.stats.claims < 2 and time.monotonic() < deadline:
                other.poll(0.1)
                sink.run(insert, max_records=1, idle_timeout_s=0.5)
            sink.run(insert, idle_timeout_s=5)
        finally:
            other.close()
    assert sorted(int(v) for *_, v in rows(path)) == list(range(600))
