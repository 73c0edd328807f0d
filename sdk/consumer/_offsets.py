"""In-order acknowledgement tracking for the iterator API (pure logic, no Kafka calls)."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

__all__ = ["AckTracker"]

TopicPartitionKey = tuple[str, int]


class AckTracker:
    """Which offset may be stored for each partition, given out-of-order acknowledgements.

    Records are tracked in the order they were handed out. An acknowledgement only moves a
    partition forward when every earlier record of that partition is acknowledged too: the
    offset to store is then ``last contiguous acknowledged offset + 1``. Offsets need not be
    contiguous (compaction and transaction markers leave gaps); the tracker only trusts the
    offsets it saw.
    """

    def __init__(self) -> None:
        self._order: dict[TopicPartitionKey, deque[int]] = {}
        self._pending: dict[TopicPartitionKey, set[int]] = {}
        self._acked: dict[TopicPartitionKey, set[int]] = {}

    def track(self, topic: str, partition: int, offset: int) -> None:
        """Register a record handed to the user (in consumption order per partition)."""
        key = (topic, partition)
        self._order.setdefault(key, deque()).append(offset)
        self._pending.setdefault(key, set()).add(offset)
        self._acked.setdefault(key, set())

    def ack(self, topic: str, partition: int, offset: int) -> int | None:
        """Acknowledge one record.

        Args:
            topic: The record's topic.
            partition: The record's partition.
            offset: The record's offset.

        Returns:
            The offset to store (next offset to read) if the partition moved forward, else None.

        Raises:
            KeyError: The record is not tracked (already acknowledged, or its partition was
                forgotten after a revoke).
        """
        key = (topic, partition)
        pending = self._pending.get(key)
        if pending is None or offset not in pending:
            raise KeyError((topic, partition, offset))
        pending.discard(offset)
        acked = self._acked[key]
        acked.add(offset)
        order = self._order[key]
        advanced: int | None = None
        while order and order[0] in acked:
            advanced = order.popleft()
            acked.discard(advanced)
        return None if advanced is None else advanced + 1

    def open_positions(self) -> dict[TopicPartitionKey, int]:
        """Per partition with records not acknowledged: the first of them."""
        return {key: order[0] for key, order in self._order.items() if order}

    def first_open(self, topic: str, partition: int) -> int | None:
        """The first tracked offset of the partition not acknowledged yet (None: none)."""
        order = self._order.get((topic, partition))
        return order[0] if order else None

    def done_above(self, topic: str, partition: int) -> set[int]:
        """Acknowledged offsets above :meth:`first_open` (finished out of order)."""
        return set(self._acked.get((topic, partition), ()))

    def forget(self, partitions: Iterable[TopicPartitionKey]) -> None:
        """Drop the records of partitions this consumer no longer owns (revoked or lost)."""
        for key in partitions:
            self._order.pop(key, None)
            self._pending.pop(key, None)
            self._acked.pop(key, None)

    def outstanding(self) -> int:
        """Records handed out and not yet acknowledged."""
        return sum(len(p) for p in self._pending.values())
