"""Manual acknowledgement on a real broker: ``QueueConsumer.records()`` and ``ack()``.

What is left in the share group afterwards is read by a raw confluent-kafka ShareConsumer in
the same group (not the SDK), as in the other queue tests.
"""

from __future__ import annotations

from typing import Any

import pytest

from sdk.errors import AcknowledgementError, ConfigurationError
from sdk.queue import QueueConsumer
from tests.sdk.consumer._support import seed
from tests.sdk.queue._support import FAST_LOCK_MS, leftovers, queue_profile

pytestmark = pytest.mark.broker


def test_each_outcome_is_what_the_broker_sees(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    """accept: done; release: delivered again with its count raised; reject: gone."""
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed(bs, topic, 30)
    deliveries: list[tuple[int, int | None]] = []
    with QueueConsumer(queue_profile(bs, "at_least_once", group), [topic]) as queue:
        for record in queue.records(max_records=33, idle_timeout_s=20):
            value = int(record.value)
            deliveries.append((value, record.delivery_count))
            if value % 10 == 5 and record.delivery_count == 1:
                queue.ack(record, "release")  # 5, 15, 25 come back
            elif value == 7:
                queue.ack(record, "reject")
            else:
                queue.ack(record)
        stats = queue.stats
    fives = sorted(d for d in deliveries if d[0] % 10 == 5)
    assert fives == [(5, 1), (5, 2), (15, 1), (15, 2), (25, 1), (25, 2)]
    assert sorted({v for v, _ in deliveries}) == list(range(30))
    assert (stats.accepted, stats.released, stats.rejected, stats.unacknowledged) == (29, 3, 1, 0)
    assert leftovers(bs, group, topic, 4.0) == []  # accepted or rejected: nothing comes back


def test_a_second_acknowledgement_and_a_stale_one_are_errors(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed(bs, topic, 5)
    with QueueConsumer(queue_profile(bs, "at_least_once", group), [topic]) as queue:
        records = queue.records(idle_timeout_s=20)
        first = next(records)
        queue.ack(first)
        with pytest.raises(AcknowledgementError, match=r"already acknowledged \(accept\)") as info:
            queue.ack(first, "release")
        assert info.value.record is first
        second = next(records)
        with pytest.raises(ConfigurationError, match="outcome"):
            queue.ack(second, "done")  # type: ignore[arg-type]
        records.close()  # the rest of the poll is released on the way out
        assert queue.stats.unacknowledged >= 1
        with pytest.raises(AcknowledgementError, match="no longer held by this consumer"):
            queue.ack(second)  # released when the iteration ended
        with pytest.raises(AcknowledgementError, match="already acknowledged"):
            queue.ack(first)
    # released, not lost (within a record lock: librdkafka may have fetched them again before
    # the consumer closed); record 0 was accepted
    again = sorted(int(v) for v, _ in leftovers(bs, group, topic, FAST_LOCK_MS / 1000 + 4))
    assert again == [1, 2, 3, 4]


def test_records_not_acknowledged_before_the_next_poll_come_back(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed(bs, topic, 20)
    seen: list[tuple[int, int | None]] = []
    with QueueConsumer(queue_profile(bs, "at_least_once", group), [topic]) as queue:
        for record in queue.records(max_records=40, idle_timeout_s=10):
            seen.append((int(record.value), record.delivery_count))
            if record.delivery_count and record.delivery_count > 1:
                queue.ack(record)  # the first delivery of each is left unacknowledged
        stats = queue.stats
    assert sorted(v for v, c in seen if c == 1) == list(range(20))
    assert sorted(v for v, c in seen if c == 2) == list(range(20))
    assert stats.unacknowledged == 20 and stats.accepted == 20
    assert any("not acknowledged before the next poll" in e for e in stats.events)


def test_at_most_once_accepts_before_handing_out(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed(bs, topic, 10)
    with QueueConsumer(queue_profile(bs, "at_most_once", group), [topic]) as queue:
        records = queue.records(idle_timeout_s=20)
        first = next(records)
        queue.ack(first)  # accepted already: nothing to do
        with pytest.raises(AcknowledgementError, match="at_most_once accepted it"):
            queue.ack(first, "release")
        records.close()  # the rest of the poll was accepted: lost, and counted
        assert queue.stats.abandoned == queue.stats.accepted - 1
    assert leftovers(bs, group, topic, 4.0) == []  # never delivered again
