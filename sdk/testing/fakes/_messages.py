"""The records and group metadata the fake clients hand out, and the partition shorthands."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import TIMESTAMP_CREATE_TIME, KafkaError, Message, TopicPartition

__all__ = [
    "DEFAULT_TIMESTAMP_MS",
    "FakeGroupMetadata",
    "FakeMessage",
    "Key",
    "PartitionLike",
]

Key = tuple[str, int]
"""``(topic, partition)``."""

PartitionLike = TopicPartition | tuple[str, int]
"""A partition as a test writes it: a ``TopicPartition`` or a ``(topic, partition)`` pair."""

DEFAULT_TIMESTAMP_MS = 1_700_000_000_000
"""Create time of a :class:`FakeMessage` that was given none."""


class FakeMessage(Message):
    """A record as a consumer returns it: a real ``confluent_kafka.Message``, easier to build.

    ``topic()``, ``partition()``, ``offset()``, ``key()``, ``value()``, ``headers()``,
    ``timestamp()`` and ``error()`` behave as confluent-kafka's, because they are its.

    Args:
        topic: Topic.
        partition: Partition.
        offset: Offset in the partition.
        value: Value (None: a tombstone).
        key: Key.
        headers: ``[(name, value), ...]``.
        timestamp: Create time in ms (``timestamp()`` returns ``(TIMESTAMP_CREATE_TIME, it)``).
        error: A ``KafkaError`` makes this an error event (see :meth:`partition_eof`).
    """

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        value: bytes | None = None,
        *,
        key: bytes | None = None,
        headers: list[tuple[str, bytes | None]] | None = None,
        timestamp: int = DEFAULT_TIMESTAMP_MS,
        error: KafkaError | None = None,
    ) -> None:
        super().__init__(
            topic=topic,
            partition=partition,
            offset=offset,
            key=key,
            value=value,
            headers=headers,  # type: ignore[arg-type]  # the stubs' HeadersType is invariant
            error=error,
            timestamp=(TIMESTAMP_CREATE_TIME, timestamp),
        )

    @classmethod
    def partition_eof(cls, topic: str, partition: int, offset: int) -> FakeMessage:
        """The event ``enable.partition.eof`` makes at the end of a partition (at ``offset``)."""
        return cls(topic, partition, offset, error=KafkaError(KafkaError._PARTITION_EOF))

    def __repr__(self) -> str:
        error = self.error()
        what = f"error={error.name()}" if error is not None else f"value={self.value()!r}"
        return f"FakeMessage({self.topic()}[{self.partition()}]@{self.offset()}, {what})"


@dataclass(frozen=True)
class FakeGroupMetadata:
    """What :meth:`FakeConsumerClient.consumer_group_metadata` returns."""

    group_id: str | None
    member_id: str | None
