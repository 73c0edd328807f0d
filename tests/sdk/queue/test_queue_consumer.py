"""The queue consumer on a real broker: acknowledgements per guarantee, redelivery, the DLQ.

What is left in the share group after a run is read by a raw confluent-kafka ShareConsumer in
the same group (not the SDK), so "accepted" and "rejected" are checked by the broker's view.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from sdk.errors import HandlerError, KafkaClientError
from sdk.queue import QueueConsumer
from sdk.records import ConsumerRecord
from tests.sdk.consumer._support import read_topic, seed
from tests.sdk.queue._support import leftovers, queue_profile

pytestmark = pytest.mark.broker


def _headers(message: Any) -> dict[str, str]:
    return {k: (v or b"").decode() for k, v in message.headers() or []}


def test_at_least_once_handles_every_record_and_leaves_nothing_in_the_queue(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(2), make_group()
    seed(bs, topic, 300)
    seen: list[bytes] = []
    with QueueConsumer(queue_profile(bs, "at_least_once", group), [topic]) as queue:
        stats = queue.run(lambda r: seen.append(r.value), max_records=300, idle_timeout_s=30)
    assert sorted(int(v) for v in seen) == list(range(300))
    assert (stats.accepted, stats.released, stats.rejected) == (300, 0, 0)
    assert leftovers(bs, group, topic, 4.0) == []  # the broker holds them all as accepted


def test_a_transient_failure_releases_the_record_and_it_comes_back_with_its_count(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed(bs, topic, 20)
    deliveries: list[tuple[int, int | None]] = []

    def handler(record: ConsumerRecord) -> None:
        value = int(record.value)
        deliveries.append((value, record.delivery_count))
        if value == 7 and record.delivery_count == 1:
            raise ConnectionError("downstream busy")

    profile = queue_profile(bs, "at_least_once", group, failure={"attempts": 3})
    with QueueConsumer(profile, [topic]) as queue:
        stats = queue.run(handler, max_records=21, idle_timeout_s=30)
    assert [d for d in deliveries if d[0] == 7] == [(7, 1), (7, 2)]
    assert sorted({v for v, _ in deliveries}) == list(range(20))
    assert (stats.released, stats.redelivered, stats.retries) == (1, 1, 1)
    assert (stats.accepted, stats.rejected, stats.handler_failures) == (20, 0, 0)
    assert leftovers(bs, group, topic, 4.0) == []


def test_a_poison_record_is_dead_lettered_then_rejected_and_holds_nothing_up(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, dlq, group = make_topic(1), make_topic(1), make_group()
    seed(bs, topic, 50)
    handled: list[int] = []

    def handler(record: ConsumerRecord) -> None:
        if record.value == b"7":
            raise ValueError("cannot parse 7")
        handled.append(int(record.value))

    failure = {"attempts": 3, "on_failure": "dlq", "dlq_topic": dlq}
    profile = queue_profile(bs, "at_least_once", group, failure=failure)
    with QueueConsumer(profile, [topic]) as queue:
        stats = queue.run(handler, max_records=52, idle_timeout_s=30)
    assert sorted(handled) == [v for v in range(50) if v != 7]  # the rest went on meanwhile
    assert (stats.released, stats.rejected, stats.dead_lettered) == (2, 1, 1)
    assert stats.handler_failures == 1
    dead = read_topic(bs, dlq, 1)
    assert [(m.key(), m.value()) for m in dead] == [(b"k7", b"7")]
    h = _headers(dead[0])
    assert (h["dlq.topic"], h["dlq.offset"], h["dlq.attempts"], h["dlq.stage"]) == (
        topic,
        "7",
        "3",
        "handler",
    )
    assert h["dlq.error.type"] == "ValueError"
    assert leftovers(bs, group, topic, 4.0) == []  # rejected: never delivered again


def test_a_failed_dead_letter_write_releases_the_record_instead_of_rejecting_it(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed(bs, topic, 5)

    def handler(record: ConsumerRecord) -> None:
        if record.value == b"2":
            raise ValueError("always")

    failure = {"attempts": 1, "on_failure": "dlq", "dlq_topic": "no-such-dead-letter-topic"}
    profile = queue_profile(bs, "at_least_once", group, failure=failure)
    with QueueConsumer(profile, [topic]) as queue, pytest.raises(KafkaClientError):
        queue.run(handler, max_records=5, idle_timeout_s=30)
    stats = queue.stats
    assert (stats.rejected, stats.dead_lettered, stats.dead_letter_failures) == (0, 0, 1)
    left = leftovers(bs, group, topic, 6.0)
    assert (b"2", 2) in left  # still in the queue, delivered again


def test_at_most_once_accepts_before_handling_so_a_failure_is_never_redelivered(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed(bs, topic, 30)
    handled: list[bytes] = []

    def handler(record: ConsumerRecord) -> None:
        if record.value == b"5":
            raise ValueError("boom")
        handled.append(record.value)

    profile = queue_profile(bs, "at_most_once", group, failure={"attempts": 2})
    queue = QueueConsumer(profile, [topic])
    with queue, pytest.raises(HandlerError):
        queue.run(handler, max_records=30, idle_timeout_s=30)
    stats = queue.stats
    assert stats.handler_failures == 1 and stats.retries == 1  # retried in process
    left = [v for v, _ in leftovers(bs, group, topic, 5.0)]
    assert b"5" not in left  # accepted before the handler ran: lost, never repeated
    assert not set(left) & set(handled)  # nothing handled comes back
    assert len(handled) + stats.abandoned + len(left) == 30, (stats, left)  # 5 is abandoned


def test_a_poison_record_delays_the_records_behind_it_less_than_in_a_consumer_group(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    """The same slow-failing record (0.4 s per attempt, 3 attempts) in both models: how long
    after its first attempt the next record of its partition is handled."""
    from sdk.consumer import Consumer
    from sdk.profiles import ConsumerProfile

    bs = kafka_cluster.bootstrap_servers
    delays: dict[str, float] = {}
    for model in ("queue", "group"):
        topic, dlq, group = make_topic(1), make_topic(1), make_group()
        seed(bs, topic, 20)
        first_poison: list[float] = []
        next_after: list[float] = []

        def handler(
            record: ConsumerRecord,
            first_poison: list[float] = first_poison,
            next_after: list[float] = next_after,
        ) -> None:
            if record.value == b"7":
                first_poison.append(time.monotonic())
                time.sleep(0.4)  # e.g. a downstream call timing out
                raise TimeoutError("downstream timed out")
            if record.value == b"8" and not next_after:
                next_after.append(time.monotonic())

        failure = {
            "attempts": 3,
            "on_failure": "dlq",
            "dlq_topic": dlq,
            "backoff_initial_ms": 0,
            "backoff_max_ms": 0,
        }
        if model == "queue":
            with QueueConsumer(
                queue_profile(bs, "at_least_once", group, failure=failure), [topic]
            ) as queue:
                queue.run(handler, max_records=22, idle_timeout_s=30)
        else:
            profile = ConsumerProfile(
                guarantee="at_least_once", bootstrap_servers=bs, group_id=group, failure=failure
            )
            with Consumer(profile, [topic]) as consumer:
                consumer.run(handler, max_records=20, idle_timeout_s=30)
        assert len(first_poison) == 3 and next_after, (model, first_poison, next_after)
        delays[model] = next_after[0] - first_poison[0]
        assert len(read_topic(bs, dlq, 1)) == 1
    print(f"record behind the poison handled after: {delays}")
    assert delays["queue"] < 0.45 < 1.2 < delays["group"], delays


def test_a_handler_slower_than_the_record_lock_is_reported_with_the_measured_time(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed(bs, topic, 1)
    profile = queue_profile(bs, "at_least_once", group, record_lock_duration_ms=1_000)
    with QueueConsumer(profile, [topic]) as queue:
        stats = queue.run(lambda record: time.sleep(1.6), max_records=1, idle_timeout_s=30)
    assert stats.slow_handlers == 1
    warning = [e for e in stats.events if "longer than the record lock (1,000 ms)" in e]
    assert warning and " ms after its poll" in warning[0], stats.events
    # the lock had expired: the late ACCEPT does not count and the broker gives the record out
    # again, as the warning says
    left = leftovers(bs, group, topic, 6.0)
    print(f"late ACCEPT: ack_failures={stats.ack_failures}, left in the queue: {left}")
    assert (b"0", 2) in left
