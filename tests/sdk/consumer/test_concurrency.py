"""Consumer.run(concurrency=N) on the broker: order per key, offsets only for what is done."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import Consumer as RawConsumer
from confluent_kafka import TopicPartition

from sdk.consumer import Consumer, ConsumerRecord
from sdk.errors import HandlerError
from tests.sdk.consumer._concurrency import Watcher
from tests.sdk.consumer._support import committed, profile
from tests.sdk.processor._support import seed as seed_keys

pytestmark = pytest.mark.broker

PARTS = 4


def _ends(bs: str, topic: str) -> list[int]:
    c = RawConsumer({"bootstrap.servers": bs, "group.id": "ends"})
    try:
        return [c.get_watermark_offsets(TopicPartition(topic, p), 10)[1] for p in range(PARTS)]
    finally:
        c.close()


@pytest.fixture
def topic_of(kafka_cluster: Any, make_topic: Any, make_group: Any) -> Any:
    def factory(count: int, keys: int) -> tuple[str, str, str]:
        bs = kafka_cluster.bootstrap_servers
        topic = make_topic(PARTS)
        seed_keys(bs, topic, count, keys)
        return bs, topic, make_group()

    return factory


@pytest.mark.parametrize(
    ("guarantee", "ordering"),
    [
        ("at_least_once", "key"),
        ("at_least_once", "partition"),
        ("at_least_once", "unordered"),
        ("at_most_once", "key"),
    ],
)
def test_every_record_once_in_order_with_records_running_at_once(
    topic_of: Any, guarantee: str, ordering: str
) -> None:
    bs, topic, group = topic_of(3_000, 300)
    watch = Watcher(ordering, sleep_s=0.003)
    prof = profile(bs, guarantee, group, auto_offset_reset="earliest", batch_size=200)
    with Consumer(prof, [topic], value_deserializer="str") as consumer:
        stats = consumer.run(
            watch, concurrency=16, ordering=ordering, max_records=3_000, idle_timeout_s=20
        )
    assert sorted(watch.handled) == list(range(3_000))  # no loss, no duplicate
    assert watch.overlaps == []  # never two records of one group at once
    assert watch.out_of_order() == []  # each group in offset order
    if ordering == "partition":
        assert watch.peak <= PARTS
    else:
        assert watch.peak > PARTS  # more than one record per partition ran at once
    assert stats.handled == 3_000
    assert committed(bs, group, topic, PARTS) == _ends(bs, topic)


def test_backpressure_pauses_and_a_slow_handler_keeps_the_membership(topic_of: Any) -> None:
    """Every handler blocks past max.poll.interval.ms: the full run pauses its partitions and
    polls on; the run ends (max_records) waiting for slow handlers, polling too."""
    bs, topic, group = topic_of(600, 600)
    watch = Watcher("key", sleep_s=0.05)
    blocked: list[str] = []

    def hook(record: ConsumerRecord) -> None:
        if record.value in ("5", "6", "7", "8", "590"):  # the 4 workers at once, then 1
            blocked.append(record.value)
            time.sleep(9)  # longer than max.poll.interval.ms (7 s) below

    watch.hook = hook
    prof = profile(
        bs,
        "at_least_once",
        group,
        auto_offset_reset="earliest",
        batch_size=50,
        extras={"max.poll.interval.ms": 7_000},
    )
    with Consumer(prof, [topic], value_deserializer="str") as consumer:
        stats = consumer.run(watch, concurrency=4, max_buffered=24, max_records=600)
        # never left the group while running (close() revokes, so read before it)
        assert (stats.revoked, stats.lost) == (0, 0)
    assert sorted(blocked) == ["5", "590", "6", "7", "8"]
    assert sorted(watch.handled) == list(range(600))
    assert stats.paused >= 1
    assert watch.overlaps == [] and watch.out_of_order() == []
    assert committed(bs, group, topic, PARTS) == _ends(bs, topic)


def test_stop_then_run_again_repeats_only_what_was_not_finished(topic_of: Any) -> None:
    """A stop leaves records taken and not handled; the next run of the same consumer reads
    them again (rewound), so nothing between the stored prefix and the next run is skipped."""
    bs, topic, group = topic_of(2_000, 500)
    watch = Watcher("key", sleep_s=0.002)
    prof = profile(bs, "at_least_once", group, auto_offset_reset="earliest", batch_size=500)
    with Consumer(prof, [topic], value_deserializer="str") as consumer:

        def hook(record: ConsumerRecord) -> None:
            if len(watch.handled) >= 300:
                consumer.stop()

        watch.hook = hook
        consumer.run(watch, concurrency=8, max_buffered=200, idle_timeout_s=20)
        first = len(watch.handled)
        assert first < 2_000
        watch.hook = None
        consumer.run(watch, concurrency=8, idle_timeout_s=3)
    counts = Counter(watch.handled)
    assert set(counts) == set(range(2_000))  # nothing skipped
    repeated = sum(c - 1 for c in counts.values())
    print(f"first run handled {first}, repeated after the stop: {repeated}")
    # at most what was taken and not committed: running, or finished above the prefix
    assert repeated <= 200 + 500  # max_buffered, plus the last batch taken past it
    assert committed(bs, group, topic, PARTS) == _ends(bs, topic)


def test_a_failing_record_stops_the_run_and_nothing_after_it_is_committed(
    topic_of: Any,
) -> None:
    bs, topic, group = topic_of(1_000, 100)
    bad = 400
    watch = Watcher("key", sleep_s=0.001)

    def hook(record: ConsumerRecord) -> None:
        if record.value == str(bad):
            raise RuntimeError("bad record")

    watch.hook = hook
    prof = profile(bs, "at_least_once", group, auto_offset_reset="earliest", batch_size=200)
    with Consumer(prof, [topic], value_deserializer="str") as consumer:
        with pytest.raises(HandlerError) as info:
            consumer.run(watch, concurrency=8, idle_timeout_s=20)
        assert isinstance(info.value.record, ConsumerRecord)
        failed = info.value.record
        assert failed.value == str(bad)
        # its partition's commit stays at or below the failed record
        assert committed(bs, group, topic, PARTS)[failed.partition] <= failed.offset
        assert str(bad) not in {str(v) for v in watch.handled}
        watch.hook = None
        consumer.run(watch, concurrency=8, idle_timeout_s=3)  # rewound: read again
    assert set(watch.handled) == set(range(1_000))
    assert committed(bs, group, topic, PARTS) == _ends(bs, topic)


def test_a_rebalance_while_records_run_loses_nothing(topic_of: Any) -> None:
    """A second member joins while the first runs slow handlers; the revoke waits for the
    running records and commits the finished prefix, the new owner goes on from there."""
    bs, topic, group = topic_of(3_000, 1_000)
    first, second = Watcher("key", sleep_s=0.01, seed=1), Watcher("key", sleep_s=0.01, seed=2)
    prof = profile(bs, "at_least_once", group, auto_offset_reset="earliest", batch_size=100)
    errors: list[BaseException] = []
    stats: dict[str, Any] = {}

    def run(name: str, watch: Watcher) -> None:
        try:
            with Consumer(prof, [topic], value_deserializer="str") as c:
                stats[name] = c.run(watch, concurrency=16, max_buffered=200, idle_timeout_s=6)
        except BaseException as exc:
            errors.append(exc)

    a = threading.Thread(target=run, args=("a", first))
    a.start()
    deadline = time.monotonic() + 60
    while len(first.handled) < 500 and time.monotonic() < deadline:
        time.sleep(0.05)
    b = threading.Thread(target=run, args=("b", second))
    b.start()
    a.join(180)
    b.join(180)
    assert not errors, errors
    assert stats["a"].revoked >= 1
    counts = Counter(first.handled + second.handled)
    assert set(counts) == set(range(3_000))  # nothing lost
    repeated = sum(c - 1 for c in counts.values())
    print(f"a handled {len(first.handled)}, b {len(second.handled)}, repeated {repeated}")
    # only records finished above a committed prefix: at most what was taken (max_buffered,
    # plus the batch taken past it) when the partitions moved
    assert repeated <= 200 + 100
    for watch in (first, second):
        assert watch.overlaps == [] and watch.out_of_order() == []
    assert committed(bs, group, topic, PARTS) == _ends(bs, topic)


def test_records_finished_above_the_committed_offset_are_not_handled_again(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    """The first record of a partition fails after 100 records above it finished: the commit
    stays at it, its metadata names the finished ones, and a new consumer skips them."""
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed_keys(bs, topic, 200, 200)  # 200 keys: every record may run at once with another
    prof = profile(
        bs,
        "at_least_once",
        group,
        auto_offset_reset="earliest",
        failure={"attempts": 1, "on_failure": "stop"},
    )
    first = Watcher("key", sleep_s=0.001)

    def hook(record: ConsumerRecord) -> None:
        if record.offset == 0:
            deadline = time.monotonic() + 30
            while len(first.handled) < 100 and time.monotonic() < deadline:
                time.sleep(0.01)
            raise RuntimeError("the first record fails once the others are done")

    first.hook = hook
    with (
        Consumer(prof, [topic], value_deserializer="str") as consumer,
        pytest.raises(HandlerError),
    ):
        consumer.run(first, concurrency=8, max_buffered=200, idle_timeout_s=20)
    done_before = set(first.handled)
    assert len(done_before) >= 100 and 0 not in done_before
    assert committed(bs, group, topic, 1) == [0]

    second = Watcher("key", sleep_s=0.0)
    with Consumer(prof, [topic], value_deserializer="str") as consumer:
        stats = consumer.run(second, concurrency=8, idle_timeout_s=4)
    assert set(second.handled) == set(range(200)) - done_before  # nothing done twice
    assert stats.skipped_done == len(done_before)
    assert committed(bs, group, topic, 1) == [200]


def test_a_handler_stuck_past_the_timeout_is_dead_lettered_and_its_key_goes_on(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    """Record 10 blocks for good; after 1 s it is dead-lettered (raw bytes, the SDK's
    headers), counts as done, and its key's later records run: everything is committed."""
    from tests.sdk.consumer._support import read_topic

    bs = kafka_cluster.bootstrap_servers
    topic, dlq, group = make_topic(PARTS), make_topic(1), make_group()
    seed_keys(bs, topic, 400, 20)  # key k10 also holds records 30, 50, ...
    forever = threading.Event()
    seen: list[int] = []

    def handler(record: ConsumerRecord) -> None:
        if record.value == "10":
            forever.wait()
        seen.append(int(record.value))

    prof = profile(
        bs,
        "at_least_once",
        group,
        auto_offset_reset="earliest",
        failure={"attempts": 2, "backoff_initial_ms": 1, "on_failure": "dlq", "dlq_topic": dlq},
    )
    try:
        with Consumer(prof, [topic], value_deserializer="str") as consumer:
            stats = consumer.run(handler, concurrency=4, handler_timeout_s=1.0, max_records=400)
    finally:
        forever.set()
    assert sorted(seen) == [i for i in range(400) if i != 10]  # k10's later records ran
    assert stats.dead_lettered == 1 and stats.handler_failures == 1 and stats.retries == 0
    dead = read_topic(bs, dlq, 1)
    assert [m.value() for m in dead] == [b"10"]
    assert committed(bs, group, topic, PARTS) == _ends(bs, topic)


def test_run_batch_sub_batches_by_key_at_once(topic_of: Any) -> None:
    bs, topic, group = topic_of(2_000, 100)
    lock = threading.Lock()
    calls: list[list[tuple[int, bytes | None, int]]] = []
    now = peak = 0

    def handler(records: list[ConsumerRecord]) -> None:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
            calls.append([(r.partition, r.key, r.offset) for r in records])
        time.sleep(0.01)
        with lock:
            now -= 1

    prof = profile(bs, "at_least_once", group, auto_offset_reset="earliest", batch_size=200)
    with Consumer(prof, [topic]) as consumer:
        stats = consumer.run_batch(handler, concurrency=4, max_records=2_000, idle_timeout_s=20)
    assert peak > 1 and stats.handled == 2_000
    seen: dict[tuple[int, bytes | None], list[int]] = {}
    for call in calls:
        keys = {(p, k) for p, k, _ in call}
        for key in keys:
            offsets = [o for p, k, o in call if (p, k) == key]
            assert offsets == sorted(offsets)
            seen.setdefault(key, []).extend(offsets)
    assert all(v == sorted(v) for v in seen.values())  # across batches too
    assert sum(len(v) for v in seen.values()) == 2_000
    assert committed(bs, group, topic, PARTS) == _ends(bs, topic)
