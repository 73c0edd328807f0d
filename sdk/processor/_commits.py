"""How the Processor commits: the pending work between commits, the commit, the recovery.

The Processor's :class:`~sdk.consumer.engine.Commits` for the consume engine (the at-most-once
commit before handling, what a rebalance does to the pending work) and the commit of that work
per guarantee: a Kafka transaction with its input offsets (exactly_once), outputs acknowledged
and then the input offsets stored (at_least_once). When a transactional call fails, the
session's one recovery decision runs and the input is rewound to its committed offsets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Literal

from confluent_kafka import TopicPartition

from sdk._client import ConsumerClient, KafkaMessage, call_kafka
from sdk.consumer.engine import HandledMarks, commit_before_handling, member_id
from sdk.core.session import TransactionSession
from sdk.errors import KafkaClientError, KafkaTimeoutError
from sdk.observability import Telemetry
from sdk.processor._positions import counting, rewind_to_committed
from sdk.processor._progress import ProgressTracker
from sdk.processor._records import ProcessorStats
from sdk.profiles import Guarantee, ProcessingProfile
from sdk.records import last_positions

__all__ = ["TransactionCommits"]

_EOS = Guarantee.EXACTLY_ONCE
_ALO = Guarantee.AT_LEAST_ONCE
_AMO = Guarantee.AT_MOST_ONCE


class TransactionCommits:
    """The work handled since the last commit, and when and how it is committed.

    Args:
        profile: The processing profile (guarantee, commit cadence).
        stats: The Processor's counters.
        txn: The transactional session (exactly_once) or the plain output (other modes).
        telemetry: Retry and safeguard metrics.
        progress: Reports assignments and commits (``on_progress``).
        on_fenced: ``"raise"`` or ``"recreate"`` (the recovery's choice when fenced).
        client: The consumer client now (None before the run and after close).
        topic: The one topic of the subscription (:func:`sdk.records.only_topic`), or None.
    """

    def __init__(
        self,
        profile: ProcessingProfile,
        stats: ProcessorStats,
        txn: TransactionSession,
        telemetry: Telemetry,
        progress: ProgressTracker,
        on_fenced: Literal["raise", "recreate"],
        client: Callable[[], ConsumerClient | None],
        topic: str | None = None,
    ) -> None:
        self.guarantee = profile.guarantee
        self._profile = profile
        self._stats = stats
        self._txn = txn
        self._tel = telemetry
        self._progress = progress
        self._on_fenced = on_fenced
        self._client = client
        self._topic = topic
        self._timeout_s = txn.timeout_s
        self.positions: dict[tuple[str, int], int] = {}
        """Next offset per partition of the records handled since the last commit."""
        self.pending = 0
        """Records handled since the last commit."""
        self.last_commit = time.monotonic()
        self._member: str | None = None  # group member id that received the assignment
        self._marks = HandledMarks()  # at_most_once: positions committed before handling

    # ---------------------------------------------------------------- when
    def wait_s(self, poll_timeout_s: float) -> float:
        """How long a poll may wait: never past when the pending records' commit is due.

        A read_committed reader sees them only after that commit.
        """
        if self.pending == 0:
            return poll_timeout_s
        due_in = self.last_commit + self._profile.commit_interval_ms / 1000.0 - time.monotonic()
        return min(poll_timeout_s, max(due_in, 0.0))

    def due(self) -> bool:
        """Whether the pending work must be committed now (count or interval reached)."""
        if self.pending == 0:
            return False
        if self.pending >= self._profile.max_records_per_transaction:
            return True
        return (time.monotonic() - self.last_commit) * 1000 >= self._profile.commit_interval_ms

    def mark(self, records: list[KafkaMessage], start: int, stop: int) -> None:
        """``records[start:stop]`` were handled: their next offsets, their pending count."""
        if stop > start:
            last_positions(records[start:stop], self.positions, self._topic)
            self.pending += stop - start

    # ---------------------------------------------------------------- how
    def commit_or_recover(self) -> bool:
        """Commit the pending work; on failure run the named recovery path. True if committed."""
        consumer = self._client()
        if consumer is None:
            return False
        stats = self._stats
        if self.guarantee is _EOS:
            if not self._txn.open:
                self.reset_pending()
                return True
            offsets = self._offsets()
            try:
                self._txn.commit(offsets, consumer.consumer_group_metadata())
            except KafkaClientError as exc:
                self.recover(exc)
                return False
            stats.commits += 1
            self._progress.commit((tp.topic, tp.partition, tp.offset) for tp in offsets)
            self.reset_pending()
            return True
        if self.guarantee is _ALO and self.pending:
            try:  # outputs acknowledged first: only then may the input offsets move
                self._txn.flush("flush (at_least_once)")
            except KafkaTimeoutError as exc:
                raise KafkaTimeoutError(
                    f"flush: at_least_once flush left records unacknowledged ({exc})",
                    kafka_error=exc.kafka_error,
                ) from exc
            offsets = self._offsets()
            if offsets:
                call_kafka(
                    lambda: consumer.store_offsets(offsets=offsets),
                    context="store_offsets",
                    commit=True,
                    on_retry=counting(stats, self._tel),
                )
            stats.commits += 1
            self._progress.commit((tp.topic, tp.partition, tp.offset) for tp in offsets)
        self.reset_pending()
        return True

    def reset_pending(self) -> None:
        """Nothing is pending any more (committed, or given up and rewound)."""
        self.positions.clear()
        self.pending = 0
        self.last_commit = time.monotonic()

    def _offsets(self, keys: Iterable[tuple[str, int]] | None = None) -> list[TopicPartition]:
        items = (
            self.positions.items()
            if keys is None
            else ((k, self.positions[k]) for k in keys if k in self.positions)
        )
        return [TopicPartition(t, p, off) for (t, p), off in sorted(items)]

    # ---------------------------------------------------------------- recovery paths
    def recover(self, exc: KafkaClientError) -> None:
        """Run the session's one recovery decision, then rewind (see docs/processor.md).

        Raises:
            ProducerFencedError: Fenced/fatal with on_fenced="raise".
        """
        self._txn.recover(exc, on_fenced=self._on_fenced)
        self.rewind()

    def abort_and_rewind(self, cause: BaseException | None = None) -> None:
        """Abort the open transaction (or recreate a fenced producer), then rewind."""
        self._txn.abort_or_recreate(cause, on_fenced=self._on_fenced)
        self.rewind()

    def abort_open(self, cause: BaseException) -> None:
        """Leaving on an exception (a cancellation too): abort the open transaction now.

        Closing alone would revoke the partitions, and the revoke commits the open
        transaction: an exception raised between two outputs of one record would commit half
        of its outputs without its offset. An abort is right whatever the exception was.
        """
        if self.guarantee is _EOS:
            self._txn.abort_on_the_way_out(cause)

    def rewind(self) -> None:
        """Seek every assigned partition back to its committed offset (no rebalance wait)."""
        self.reset_pending()
        consumer = self._client()
        if consumer is None:
            return  # closed: the next owner starts from the committed offsets
        rewind_to_committed(
            consumer,
            latest=self._profile.consumer.auto_offset_reset == "latest",
            stats=self._stats,
            timeout_s=self._timeout_s,
            telemetry=self._tel,
        )

    # ---------------------------------------------------------------- the engine's Commits
    def admit(self, client: ConsumerClient, messages: list[KafkaMessage]) -> list[KafkaMessage]:
        """at_most_once: the batch committed before handling (the records that may be handled)."""
        if self.guarantee is not _AMO:
            return messages
        records = commit_before_handling(
            client,
            messages,
            assigned_as=self._member,
            stats=self._stats,
            marks=self._marks,
            telemetry=self._tel,
            on_retry=counting(self._stats, self._tel),
            committed_timeout_s=self._timeout_s,
        )
        if records:
            self._progress.commit((m.topic(), m.partition(), m.offset() + 1) for m in records)
        return records

    def end_run(self, client: ConsumerClient, failed: bool, in_flight: int) -> None:
        """The run ends: commit the pending work (an exception aborted it already)."""
        if failed:
            return
        try:
            self.commit_or_recover()
        except BaseException as exc:
            self.abort_open(exc)
            raise

    def on_assign(self, consumer: ConsumerClient, partitions: list[TopicPartition]) -> None:
        """Remember the member (at_most_once ownership) and report the assignment."""
        self._member = member_id(consumer)  # at_most_once: handle only as this member
        if self.guarantee is _AMO:  # nothing below the committed offset
            self._marks.assigned(partitions)
        self._stats.note(f"assigned {len(partitions)} partitions")
        self._progress.rebalanced("assigned", partitions)

    def on_revoke(self, consumer: ConsumerClient, partitions: list[TopicPartition]) -> None:
        """Commit (or abort and rewind) the in-flight work before the partitions go.

        Raises:
            KafkaClientError: The commit and its recovery failed (the engine raises it from
                the next poll); the pending work is dropped either way.
        """
        self._marks.released(partitions)
        try:
            self.commit_or_recover()
        finally:
            self.reset_pending()
            self._progress.rebalanced("revoked", partitions)

    def on_lost(self, consumer: ConsumerClient, partitions: list[TopicPartition]) -> None:
        """Partitions were lost (session expired): another member may own them; abort.

        Raises:
            KafkaClientError: A new producer could not be initialised (the engine raises it
                from the next poll).
        """
        self._marks.released(partitions)
        try:
            if self.guarantee is _EOS and self._txn.open:
                # never raises a fence here: a lost member's epoch may well be stale
                self._txn.abort_or_recreate(on_fenced="recreate")
        finally:
            self.reset_pending()
            self._progress.rebalanced("lost", partitions)
