"""How the database sink commits, as the consume engine sees it: claims and advice to Kafka.

The batches themselves commit in :class:`~sdk.sink.DatabaseSink` (one database transaction
each, with their positions); what is left for the engine's
:class:`~sdk.consumer.engine.Commits` is what happens around them: claiming assigned partitions
(exactly_once: the epoch bump, the start at the stored position), letting revoked or lost ones
go, and sending the offsets advised to Kafka for lag tooling.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress

from confluent_kafka import TopicPartition

from sdk._client import ConsumerClient, KafkaMessage
from sdk.sink._database import Position
from sdk.sink._positions import Holdings
from sdk.sink._records import SinkStats

__all__ = ["SinkCommits"]

Partition = tuple[str, int]


class SinkCommits:
    """The sink's part of a rebalance and of the end of a run.

    Args:
        held: The claims and positions this member holds.
        eos: exactly_once (positions in the database) or at_least_once.
        incremental: The group assigns incrementally (cooperative or KIP-848): the assignment
            callback assigns with ``incremental_assign``.
        start_offset: Where a partition without a stored position starts (librdkafka's
            logical offset).
        claim: Claims partitions in the database (retried per the sink's policy); returns the
            stored position of each.
        stats: The sink's counters (``claims``).
    """

    def __init__(
        self,
        held: Holdings,
        *,
        eos: bool,
        incremental: bool,
        start_offset: int,
        claim: Callable[[list[Partition]], dict[Partition, Position]],
        stats: SinkStats,
    ) -> None:
        self._held = held
        self._eos = eos
        self._incremental = incremental
        self._start_offset = start_offset
        self._claim = claim
        self._stats = stats

    def admit(self, client: ConsumerClient, messages: list[KafkaMessage]) -> list[KafkaMessage]:
        """Every polled record goes to the batch's transaction (split there)."""
        return messages

    def end_run(self, client: ConsumerClient, failed: bool, in_flight: int) -> None:
        """Nothing is in flight after a run; the offsets advised to Kafka are sent."""
        self._held.flush_advice(client)

    def on_assign(self, consumer: ConsumerClient, partitions: list[TopicPartition]) -> None:
        """exactly_once: claim the partitions (epochs bumped) and start at their positions.

        Raises:
            DatabaseError: The claim failed (after the sink's retries): the partitions are
                assigned paused, unclaimed; the engine raises the error from the next poll.
        """
        if not self._eos:
            return  # librdkafka assigns at the committed offsets
        keys = [(tp.topic, tp.partition) for tp in partitions]
        claims: dict[Partition, Position] = {}
        failure: BaseException | None = None
        if keys:
            try:
                claims = self._claim(keys)
                self._stats.claims += 1
            except BaseException as exc:  # raised below, once the partitions are paused
                failure = exc
        self._held.claimed(claims, partitions, self._start_offset)
        if self._incremental:
            consumer.incremental_assign(partitions)
        else:
            consumer.assign(partitions)
        with suppress(Exception):
            if failure is not None:
                consumer.pause(partitions)  # unclaimed: not this member's to handle
            else:  # librdkafka keeps a partition paused across a rebalance (a fenced one)
                consumer.resume(partitions)
        if failure is not None:
            raise failure

    def on_revoke(self, consumer: ConsumerClient, partitions: list[TopicPartition]) -> None:
        """Send the advised offsets of the partitions; their claims are let go."""
        # nothing is in flight: a batch is committed or rolled back before the next poll
        keys = [(tp.topic, tp.partition) for tp in partitions]
        self._held.flush_advice(consumer, keys)
        self._held.released(keys)

    def on_lost(self, consumer: ConsumerClient, partitions: list[TopicPartition]) -> None:
        """The claims are let go; nothing is committed to Kafka for them."""
        keys = [(tp.topic, tp.partition) for tp in partitions]
        self._held.released(keys, lost=True)
