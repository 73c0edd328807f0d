"""at_least_once on a queue when a poll stops part-way: an interrupt, a stop, the lock budget.

Each case runs twice: bytes in (the records go through ``handle_run`` in runs, accepted together
after each run) and with a deserializer (the per-record Python loop). Both must leave the
broker in the same state: what the handler finished is accepted, the rest comes back. What is
left is read by a raw confluent-kafka ShareConsumer (not the SDK).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from sdk.queue import QueueConsumer
from sdk.records import ConsumerRecord
from tests.sdk.consumer._support import seed
from tests.sdk.queue._support import leftovers, queue_profile

pytestmark = pytest.mark.broker

PATHS = [
    pytest.param("bytes", id="runs"),  # handle_run, accepted per run
    pytest.param("str", id="per-record"),  # a deserializer: the Python loop
]


@pytest.mark.parametrize("deserializer", PATHS)
def test_an_interrupt_mid_poll_accepts_what_was_handled_and_releases_the_rest(
    kafka_cluster: Any, make_topic: Any, make_group: Any, deserializer: str
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed(bs, topic, 50)
    seen: list[int] = []

    def handler(record: ConsumerRecord) -> None:
        value = int(record.value)
        if value == 20:
            raise KeyboardInterrupt  # not an Exception: no failure policy, straight out
        seen.append(value)

    profile = queue_profile(bs, "at_least_once", group)
    with QueueConsumer(profile, [topic], value_deserializer=deserializer) as queue:
        with pytest.raises(KeyboardInterrupt):
            queue.run(handler, idle_timeout_s=30)
        stats = queue.stats
    handled = set(seen)
    assert seen == sorted(seen) and handled == set(range(len(seen)))  # in order, from 0
    assert stats.accepted == len(seen) and stats.handled == len(seen)
    assert 20 not in handled and stats.released == stats.polled - len(seen)
    back = sorted(int(v) for v, _ in leftovers(bs, group, topic, 4.0))
    assert back == [v for v in range(50) if v not in handled]  # nothing lost, none accepted twice


@pytest.mark.parametrize("deserializer", PATHS)
def test_a_stop_from_the_handler_returns_within_a_millisecond_and_gives_the_rest_back(
    kafka_cluster: Any, make_topic: Any, make_group: Any, deserializer: str
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed(bs, topic, 200)
    seen: list[int] = []
    queue = QueueConsumer(
        queue_profile(bs, "at_least_once", group), [topic], value_deserializer=deserializer
    )

    def handler(record: ConsumerRecord) -> None:
        seen.append(int(record.value))
        if len(seen) == 10:
            queue.stop()
        time.sleep(0.0002)  # 0.2 ms: the stop is seen within about five records

    with queue:
        stats = queue.run(handler, idle_timeout_s=30)
    assert 10 <= len(seen) <= 20, len(seen)
    assert stats.accepted == len(seen) and stats.released == stats.polled - len(seen)
    back = sorted(int(v) for v, _ in leftovers(bs, group, topic, 4.0))
    assert back == [v for v in range(200) if v not in set(seen)]


@pytest.mark.parametrize("deserializer", PATHS)
def test_records_past_the_lock_budget_are_released_unhandled_and_handled_later(
    kafka_cluster: Any, make_topic: Any, make_group: Any, deserializer: str
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed(bs, topic, 30)
    deliveries: list[tuple[int, int | None]] = []

    def handler(record: ConsumerRecord) -> None:
        deliveries.append((int(record.value), record.delivery_count))
        time.sleep(0.05)  # 30 records: 1.5 s, past the budget of a 1 s lock (0.8 s)

    profile = queue_profile(bs, "at_least_once", group, record_lock_duration_ms=1_000)
    with QueueConsumer(profile, [topic], value_deserializer=deserializer) as queue:
        stats = queue.run(handler, max_records=60, idle_timeout_s=5)
    values = [v for v, _ in deliveries]
    assert sorted(set(values)) == list(range(30))
    assert len(values) == 30, deliveries  # released unhandled: no record was handled twice
    assert stats.lock_budget_releases >= 1 and stats.released == stats.lock_budget_releases
    assert any(count == 2 for _, count in deliveries)  # the released ones came back
    assert stats.slow_handlers == 0  # none was acknowledged after its lock
    assert leftovers(bs, group, topic, 3.0) == []
