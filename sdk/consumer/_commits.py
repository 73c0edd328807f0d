"""Where and when offsets are committed: the ordering that makes each guarantee."""

from __future__ import annotations

import logging
from collections.abc import Callable

from confluent_kafka import KafkaError, TopicPartition

from sdk._client import ConsumerClient, KafkaMessage, call_kafka
from sdk.consumer._at_most_once import (
    HandledMarks,
    check_partitions,
    commit_before_handling,
    member_id,
    next_offsets,
    rewind,
    seek_back,
)
from sdk.consumer._done_offsets import decode as decode_done
from sdk.consumer._done_offsets import encode as encode_done
from sdk.consumer._offsets import AckTracker
from sdk.consumer._records import ConsumerStats
from sdk.errors import KafkaClientError, SdkError
from sdk.observability import Telemetry
from sdk.profiles import Guarantee

__all__ = ["OffsetKeeper", "next_offsets"]

_log = logging.getLogger("sdk.consumer")


class OffsetKeeper:
    """Commits and stores offsets in the order the guarantee needs.

    * ``at_most_once``: :meth:`before_handling` commits a polled batch synchronously; nothing
      else ever commits (auto commit is off).
    * ``at_least_once``: :meth:`handled` / :meth:`ack` store ``offset + 1`` once records are
      done; the auto-commit timer commits stored offsets, and :meth:`commit_stored` does it
      synchronously (revoke, end of a run, close).

    Args:
        guarantee: ``at_most_once`` or ``at_least_once``.
        stats: The consumer's counters.
    """

    def __init__(self, guarantee: Guarantee, stats: ConsumerStats) -> None:
        self.guarantee = guarantee
        self.stats = stats
        self.tracker = AckTracker()
        self._alo = guarantee is Guarantee.AT_LEAST_ONCE
        self._member: str | None = None  # the member id that received the assignment
        self._marks = HandledMarks()  # at_most_once: positions committed before handling
        self.telemetry: Telemetry | None = None  # set by the Consumer
        self.release: Callable[[ConsumerClient, list[TopicPartition], bool], None] | None = None
        """Set during a concurrent run: called first when partitions are revoked (False) or
        lost (True), to settle the records of those partitions still in the run's hands."""
        self.done_above: dict[tuple[str, int], set[int]] = {}
        """Per partition, offsets above the committed one already finished by a concurrent
        run (from the commit's metadata, or kept when a run rewound): skipped, not handled."""
        self.load_done = False  # a concurrent run is on: read done_above at each assignment
        # concurrent runs: the last offset (with its metadata) stored per partition, committed
        # explicitly (librdkafka's commit of the stored offsets drops their metadata)
        self._explicit: dict[tuple[str, int], TopicPartition] = {}

    def admit(self, client: ConsumerClient, messages: list[KafkaMessage]) -> list[KafkaMessage]:
        """at_most_once: commit the batch synchronously before any handler sees it.

        The batch is handled only if the commit was accepted for this member's generation:
        if the group session is gone before or after the commit (``memberid()`` changed or
        cleared, see :mod:`sdk.consumer._at_most_once`), the batch is not handled — another
        member may own its partitions and have started from the older committed offset.
        Records the client delivers again below a position already committed are dropped.

        Returns:
            The records to handle (at_least_once: ``messages``). Empty if a rebalance refused
            the commit or the session was lost — nothing was handled and the partitions were
            rewound to the batch's first offsets, so their owner reads it again — or if every
            record was a redelivery.

        Raises:
            KafkaClientError: The commit failed otherwise (CommitError unless more specific).
        """
        if self._alo:
            return messages
        return commit_before_handling(
            client,
            messages,
            assigned_as=self._member,
            stats=self.stats,
            marks=self._marks,
            telemetry=self.telemetry,
        )

    def handled(self, client: ConsumerClient, messages: list[KafkaMessage]) -> None:
        """The records are handled or dead-lettered: store their offsets (at_least_once).

        Raises:
            KafkaClientError: Storing failed (other than for a partition no longer assigned).
        """
        if self._alo:
            self._store(client, next_offsets(messages))

    def track(self, message: KafkaMessage) -> None:
        """Remember a record handed out by the iterator (at_least_once)."""
        if self._alo:
            self.tracker.track(message.topic(), message.partition(), message.offset())

    def ack(self, client: ConsumerClient | None, topic: str, partition: int, offset: int) -> None:
        """Acknowledge an iterator record; store the offset after the acknowledged prefix.

        Raises:
            KafkaClientError: Storing failed.
        """
        if not self._alo:
            return  # at_most_once committed before yielding
        try:
            next_offset = self.tracker.ack(topic, partition, offset)
        except KeyError:
            self.stats.stale_acks += 1
            return
        if next_offset is not None and client is not None:
            self._store(client, [TopicPartition(topic, partition, next_offset)])

    def acked(self, client: ConsumerClient, messages: list[KafkaMessage]) -> None:
        """Records tracked with :meth:`track` are done, in any order (at_least_once).

        Stores, for each partition touched, the first offset not done, with the offsets done
        above it in the metadata (:mod:`sdk.consumer._done_offsets`); one store for them all.

        Raises:
            KafkaClientError: Storing failed.
        """
        if not self._alo:
            return
        touched: dict[tuple[str, int], int | None] = {}
        tracker = self.tracker
        for m in messages:
            key = (m.topic(), m.partition())
            try:
                next_offset = tracker.ack(key[0], key[1], m.offset())
            except KeyError:  # its partition was revoked or lost meanwhile
                self.stats.stale_acks += 1
                continue
            if next_offset is not None:
                touched[key] = next_offset
            else:
                touched.setdefault(key, None)
        offsets = []
        for (topic, partition), advanced in sorted(touched.items()):
            position = tracker.first_open(topic, partition)
            if position is None:  # every tracked record is done: the offset after them
                if advanced is None:
                    continue
                position = advanced
            done = tracker.done_above(topic, partition)
            done |= self.done_above.get((topic, partition), set())
            metadata = encode_done(position, done)
            before = self._explicit.get((topic, partition))
            if before is not None and (before.offset, before.metadata) == (position, metadata):
                continue
            tp = TopicPartition(topic, partition, position, metadata=metadata)
            offsets.append(tp)
            self._explicit[(topic, partition)] = tp
        if offsets:
            self._store(client, offsets)

    def rewind_open(self, client: ConsumerClient, *, keep_done: bool = False) -> None:
        """Seek each partition back to its first tracked record not acknowledged, and forget.

        A run or an iteration that ends with records taken and not done: without the seek,
        the next run of this consumer would go on after them (and commit past them).
        ``keep_done``: the records acknowledged above that point are kept in
        :attr:`done_above`, so a concurrent run skips them when they come again.
        """
        if not self._alo:
            return
        positions = self.tracker.open_positions()
        for (topic, partition), offset in sorted(positions.items()):
            if keep_done:
                self.done_above.setdefault((topic, partition), set()).update(
                    self.tracker.done_above(topic, partition)
                )
            seek_back(client, topic, partition, offset)
        self.tracker.forget(positions)

    def rewind_rest(
        self, client: ConsumerClient | None, messages: list[KafkaMessage], rest: int
    ) -> None:
        """The last ``rest`` records of a batch handled in order were not finished.

        at_least_once: seek back to them, so the next run of this consumer reads them again.
        """
        if self._alo and rest > 0 and client is not None:
            rewind(client, messages[len(messages) - rest :])

    def _store(self, client: ConsumerClient, offsets: list[TopicPartition]) -> None:
        try:
            call_kafka(
                lambda: client.store_offsets(offsets=offsets), context="store_offsets", commit=True
            )
        except KafkaClientError as exc:
            self._refused(exc)
            return
        self.stats.stored += 1

    def _refused(self, exc: KafkaClientError) -> None:
        """A refused store: noted for a partition no longer assigned, else raised.

        Raises:
            KafkaClientError: ``exc``, unless the partition is no longer assigned.
        """
        if exc.code not in (KafkaError._STATE, KafkaError._UNKNOWN_PARTITION):
            raise exc
        # no longer assigned (e.g. max.poll.interval.ms passed): the next owner handles the
        # record again, which at-least-once allows
        self.stats.note(str(exc))

    def commit_stored(self, client: ConsumerClient, context: str) -> None:
        """at_least_once: commit the stored offsets synchronously (no-op if none).

        Raises:
            KafkaClientError: The commit failed (CommitError unless more specific).
        """
        if not self._alo:
            return
        explicit = list(self._explicit.values())
        try:
            if explicit:  # a concurrent run's offsets, with their metadata
                result = call_kafka(
                    lambda: client.commit(offsets=explicit, asynchronous=False),
                    context=context,
                    commit=True,
                )
            else:
                result = call_kafka(
                    lambda: client.commit(asynchronous=False), context=context, commit=True
                )
        except KafkaClientError as exc:
            if exc.code == KafkaError._NO_OFFSET:
                return  # nothing stored since the last commit
            raise
        check_partitions(result, context)
        self.stats.commits += 1
        self._explicit.clear()

    def on_assign(self, consumer: ConsumerClient, partitions: list[TopicPartition]) -> None:
        """Remember which member received the assignment (at_most_once ownership check).

        at_most_once also checks the new partitions' committed offsets before their first
        batch is committed (:meth:`HandledMarks.check`): nothing below them is handed out.
        """
        self._member = member_id(consumer)
        if not self._alo:
            self._marks.assigned(partitions)
        elif self.load_done:
            self._load_done(consumer, partitions)

    def end_run(self, client: ConsumerClient, failed: bool, in_flight: int) -> None:
        """A run ends: commit what it handled (at_least_once); count what at_most_once lost.

        Raises:
            KafkaClientError: The commit failed and the run did not fail otherwise (an error
                that ended the run is not masked: the failed commit is only logged then).
        """
        if in_flight and not self._alo:
            self.stats.abandoned += in_flight  # committed before handling, never handled
        if not failed:
            self.commit_stored(client, "commit at the end of the run")
            return
        try:
            self.commit_stored(client, "commit at the end of the run")
        except SdkError as exc:  # don't mask the error that ended the run
            _log.warning("%s", exc)

    def on_revoke(self, consumer: ConsumerClient, partitions: list[TopicPartition]) -> None:
        """Commit what was handled before the partitions go to another member."""
        if self.release is not None:
            self.release(consumer, partitions, False)
        self._marks.released(partitions)
        try:
            self.commit_stored(consumer, "commit on revoke")
        except SdkError as exc:  # at_least_once: the new owner repeats those records
            self.stats.note(str(exc))
            _log.warning("%s", exc)
        self._forget(partitions)

    def on_lost(self, consumer: ConsumerClient, partitions: list[TopicPartition]) -> None:
        """Partitions were lost (session expired): no commit is possible any more."""
        if self.release is not None:
            self.release(consumer, partitions, True)
        self._marks.released(partitions)
        self._forget(partitions)

    def _forget(self, partitions: list[TopicPartition]) -> None:
        keys = [(tp.topic, tp.partition) for tp in partitions]
        self.tracker.forget(keys)
        for key in keys:
            self.done_above.pop(key, None)
            self._explicit.pop(key, None)

    def _load_done(self, client: ConsumerClient, partitions: list[TopicPartition]) -> None:
        """Read the offsets done above the committed ones from the commits' metadata."""
        if not partitions:
            return
        try:
            committed = call_kafka(
                lambda: client.committed(partitions, timeout=10), context="committed"
            )
        except KafkaClientError as exc:  # the records above are handled again: allowed
            _log.warning("reading the committed offsets' metadata: %s", exc)
            return
        for tp in committed:
            done = decode_done(tp.offset, tp.metadata)
            if done:
                self.done_above[(tp.topic, tp.partition)] = done
