"""The partitioner strategy: a per-topic, one-method Protocol (franz-go's ``Partitioner`` shape).

A :class:`Partitioner` is configured once per producer; :meth:`Partitioner.for_topic` hands out a
:class:`TopicPartitioner` that keeps whatever per-topic state the strategy needs (a round-robin
counter, the current sticky partition). Strategies that react to batches being sent also
implement :class:`BatchAware`.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

__all__ = ["BatchAware", "Partitioner", "TopicPartitioner"]


@runtime_checkable
class TopicPartitioner(Protocol):
    """Chooses the partition of one record of one topic."""

    def partition(self, key: bytes | None, value: bytes | None, partition_count: int) -> int:
        """Return the partition, in ``range(partition_count)``, for a record.

        Args:
            key: The serialized key, or None for a null key.
            value: The serialized value, or None.
            partition_count: How many partitions the topic has now (always > 0).

        Returns:
            The partition number.
        """
        ...


@runtime_checkable
class BatchAware(Protocol):
    """Optional extra of a :class:`TopicPartitioner` that changes behaviour per sent batch."""

    def on_batch_sent(self) -> None:
        """Tell the partitioner that the batch it has been filling was handed to the broker."""
        ...


@runtime_checkable
class Partitioner(Protocol):
    """A partitioning strategy, configured once and asked for a per-topic partitioner.

    Attributes:
        name: The registry name (what a profile writes, e.g. ``"murmur2"``).
        native_name: librdkafka's ``partitioner`` value when librdkafka implements exactly this
            strategy (then no Python runs per record), else None.
        requires_consistency: True when records with the same key must always land on the same
            partition, so a record must never be re-partitioned (e.g. on a retry after the
            partition count changed).
    """

    @property
    def name(self) -> str:
        """Registry name."""
        ...

    @property
    def native_name(self) -> str | None:
        """The librdkafka ``partitioner`` value, or None for a Python-only strategy."""
        ...

    @property
    def requires_consistency(self) -> bool:
        """Whether same-key records must keep one partition."""
        ...

    def for_topic(self, topic: str) -> TopicPartitioner:
        """Return the partitioner for ``topic`` (called once per topic, then cached).

        Args:
            topic: The topic name.

        Returns:
            A :class:`TopicPartitioner`; may carry per-topic state.
        """
        ...
