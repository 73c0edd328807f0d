"""Value objects of the consuming side: the record, the handler protocols, state and counters."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from sdk.records import ConsumerRecord

__all__ = [
    "BatchRecordHandler",
    "ConsumerRecord",
    "ConsumerStats",
    "RecordHandler",
]


class RecordHandler(Protocol):
    """Handle one record; raising counts as a failure (retried, then DLQ or stop)."""

    def __call__(self, record: ConsumerRecord, /) -> object:
        """Handle ``record``; the return value is ignored."""
        ...


class BatchRecordHandler(Protocol):
    """Handle a batch of records at once (up to ``profile.batch_size``)."""

    def __call__(self, records: list[ConsumerRecord], /) -> object:
        """Handle ``records`` in order; the return value is ignored."""
        ...


@dataclass
class ConsumerStats:
    """What the consumer did; each outcome has its own counter.

    Attributes:
        polled: Records taken from Kafka (poison pills included).
        handled: Records whose handler (or batch handler) succeeded.
        retries: Handler calls retried (a failed attempt followed by another).
        handler_failures: Records on which the handler failed every attempt.
        deserialization_failures: Records whose key or value could not be deserialized.
        dead_lettered: Records sent to the dead-letter topic (and acknowledged there).
        commits: Synchronous offset commits made by the SDK (at_most_once before handling;
            at_least_once on revoke, stop and close).
        stored: Offsets stored for the auto-commit timer (at_least_once).
        abandoned: at_most_once only: records whose offset was committed but that were never
            handled successfully nor dead-lettered (the run stopped on an error, or the
            iterator was left, in the middle of a polled batch). They are lost, which is what
            at-most-once allows; this counter makes the loss visible.
        commit_refused: at_most_once only: batches whose pre-handling commit a rebalance
            refused, or whose group session was lost around the commit; they were not
            handled, and were rewound to be read again by their owner.
        redelivered: at_most_once only: records dropped because the client delivered them
            again below a position already committed before handling; handing them out again
            would duplicate them.
        stale_acks: ``ack()`` calls for records of a partition no longer assigned (or acked
            twice); nothing is stored for them.
        revoked: Rebalance revocations handled.
        lost: Partition losses (session expired) seen.
        registry_retries: Decodings of a record retried because the schema registry did not
            answer (the record was neither dead-lettered nor committed meanwhile).
        paused: Times a concurrent run (``run(concurrency=N)``) paused its partitions
            because ``max_buffered`` records were taken and not finished (polling went on).
        skipped_done: Records a concurrent run did not hand to its handler because they
            had been finished already, above the committed offset, before a restart, a
            rebalance or a rewind (the commit's metadata recorded them).
        errors: Non-fatal client error events, translated (kept to the last 100).
    """

    polled: int = 0
    handled: int = 0
    retries: int = 0
    handler_failures: int = 0
    deserialization_failures: int = 0
    dead_lettered: int = 0
    commits: int = 0
    stored: int = 0
    abandoned: int = 0
    commit_refused: int = 0
    redelivered: int = 0
    stale_acks: int = 0
    revoked: int = 0
    lost: int = 0
    registry_retries: int = 0
    paused: int = 0
    skipped_done: int = 0
    errors: list[str] = field(default_factory=list)

    def note(self, error: str) -> None:
        """Remember a non-fatal error event (the last 100 are kept)."""
        self.errors.append(error)
        if len(self.errors) > 100:
            del self.errors[:10]
