"""Assign partitions again, so that librdkafka itself reads their committed offsets.

A front end that must put a partition back at its committed offset usually reads the offset
(``committed()``) and seeks to it. Two things can stop that: ``seek()`` refuses a partition
that is not fetching yet, and ``committed()`` can time out for longer than any retry budget
(a coordinator connection whose answers were dropped stays silent until librdkafka's request
timeout tears it down). Assigning the partition again works in both cases: a partition
assigned without an offset is not fetched until librdkafka has read its committed offset from
the coordinator, which it retries on its own for as long as it takes. Nothing of the
partition is returned in the meantime, so nothing is handled from a wrong position.

Which call reassigns depends on the group's rebalance protocol: the cooperative protocol (and
KIP-848's) takes ``incremental_unassign``/``incremental_assign``; the eager one refuses those
with ``_STATE`` and takes only ``assign()`` of the whole assignment.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, TopicPartition

from sdk._client import ConsumerClient, translating
from sdk.errors import KafkaClientError

__all__ = ["reassign"]


def reassign(consumer: ConsumerClient, partitions: list[TopicPartition]) -> None:
    """Put ``partitions`` back at their committed offsets by assigning them again.

    Under the eager protocol the whole assignment is replaced; the other partitions keep
    their positions (a partition without one reads its committed offset too).

    Args:
        consumer: A subscribed consumer that holds ``partitions``.
        partitions: The partitions to reset (their offsets are ignored).

    Raises:
        KafkaClientError: The client refused the assignment for another reason than the
            rebalance protocol.
    """
    wanted = {(tp.topic, tp.partition) for tp in partitions}
    if not wanted:
        return
    fresh = [TopicPartition(t, p) for t, p in sorted(wanted)]
    try:
        with translating("reassign: incremental_unassign"):
            consumer.incremental_unassign(fresh)
    except KafkaClientError as exc:
        if exc.code != KafkaError._STATE:
            raise
    else:
        with translating("reassign: incremental_assign"):
            consumer.incremental_assign(fresh)
        return
    # The eager protocol: assign() replaces the whole assignment in one call.
    held = consumer.assignment()
    reset = [
        TopicPartition(tp.topic, tp.partition) for tp in held if (tp.topic, tp.partition) in wanted
    ]
    others = [tp for tp in held if (tp.topic, tp.partition) not in wanted]
    kept = consumer.position(others) if others else []
    with translating("reassign: assign"):
        consumer.assign(reset + [TopicPartition(tp.topic, tp.partition, tp.offset) for tp in kept])
