"""Assign partitions again, so that librdkafka itself reads their committed offsets.

A front end that must put a partition back at its committed offset usually reads the offset
(``committed()``) and seeks to it. Two things can stop that: ``seek()`` refuses a partition
that is not fetching yet, and ``committed()`` can time out for longer than any retry budget
(a coordinator connection whose answers were dropped stays silent until librdkafka's request
timeout tears it down). Assigning the partition again works in both cases: a partition
assigned without an offset is not fetched until librdkafka has read its committed offset from
the coordinator, which it retries on its own for as long as it takes. Nothing of the
partition is returned in the meantime, so nothing is handled from a wrong position.

A front end whose position lives elsewhere (the database sink: in the database) reassigns
with the offsets it wants instead (``at_offsets=True``).

Which call reassigns depends on the group's rebalance protocol: the cooperative protocol (and
KIP-848's) takes ``incremental_unassign``/``incremental_assign``; the eager one refuses those
with ``_STATE`` and takes only ``assign()`` of the whole assignment.
"""

from __future__ import annotations

from confluent_kafka import KafkaError, TopicPartition

from sdk._client import ConsumerClient, translating
from sdk.errors import KafkaClientError

__all__ = ["reassign"]


def reassign(
    consumer: ConsumerClient, partitions: list[TopicPartition], *, at_offsets: bool = False
) -> None:
    """Put ``partitions`` back at their committed offsets by assigning them again.

    Under the eager protocol the whole assignment is replaced; the other partitions keep
    their positions (a partition without one reads its committed offset too).

    Args:
        consumer: A subscribed consumer that holds ``partitions``.
        partitions: The partitions to reset (their offsets are ignored unless
            ``at_offsets``).
        at_offsets: Assign each partition at its given offset rather than the committed one.

    Raises:
        KafkaClientError: The client refused the assignment for another reason than the
            rebalance protocol.
    """
    # (topic, partition) -> the offset to assign at (None: the committed one)
    wanted = {(tp.topic, tp.partition): tp.offset if at_offsets else None for tp in partitions}
    if not wanted:
        return

    def fresh(topic: str, partition: int) -> TopicPartition:
        offset = wanted[(topic, partition)]
        if offset is None:
            return TopicPartition(topic, partition)
        return TopicPartition(topic, partition, offset)

    try:
        with translating("reassign: incremental_unassign"):
            consumer.incremental_unassign([TopicPartition(t, p) for t, p in sorted(wanted)])
    except KafkaClientError as exc:
        if exc.code != KafkaError._STATE:
            raise
    else:
        with translating("reassign: incremental_assign"):
            consumer.incremental_assign([fresh(t, p) for t, p in sorted(wanted)])
        return
    # The eager protocol: assign() replaces the whole assignment in one call.
    held = consumer.assignment()
    reset = [fresh(tp.topic, tp.partition) for tp in held if (tp.topic, tp.partition) in wanted]
    others = [tp for tp in held if (tp.topic, tp.partition) not in wanted]
    kept = consumer.position(others) if others else []
    with translating("reassign: assign"):
        consumer.assign(reset + [TopicPartition(tp.topic, tp.partition, tp.offset) for tp in kept])
