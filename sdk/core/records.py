"""The record a handler returns, and the counters of the transactional session."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["OutputRecord", "TransactionStats"]

_log = logging.getLogger("sdk.processor")


@dataclass(frozen=True)
class OutputRecord:
    """One record a handler (Processor, Spark transform) wants produced.

    Attributes:
        topic: Destination topic.
        value: Payload (bytes or str, sent UTF-8 encoded; None is a tombstone).
        key: Optional key (decides the partition with the profile's partitioner).
        headers: Optional headers as ``(name, value)`` pairs.
        partition: Explicit partition, or None to let the partitioner choose.
    """

    topic: str
    value: bytes | str | None
    key: bytes | str | None = None
    headers: Sequence[tuple[str, bytes | str | None]] | None = None
    partition: int | None = None


@dataclass
class TransactionStats:
    """What the transactional session did; each recovery path increments its own counter.

    Attributes:
        aborts: Transactions aborted, for any reason (an abort by a new epoch included).
        retries: Kafka calls retried because the error was transient.
        abortable_recoveries: Abortable errors recovered by abort + rewind.
        fenced: Fatal/fenced producer errors seen.
        ambiguous: Commit/abort calls whose outcome was unknown (stalled calls included).
        transaction_timeouts: Failures of a transaction older than transaction.timeout.ms
            that were neither ambiguous nor fenced.
        producer_recreations: Producers closed and created anew (init_transactions again).
        stalled_calls: Transactional calls that ignored their timeout (librdkafka #5456) and
            were abandoned; each is also counted in ``ambiguous``.
        events: The last event lines (see :meth:`note`).
    """

    aborts: int = 0
    retries: int = 0
    abortable_recoveries: int = 0
    fenced: int = 0
    ambiguous: int = 0
    transaction_timeouts: int = 0
    producer_recreations: int = 0
    stalled_calls: int = 0
    events: list[str] = field(default_factory=list)

    def note(self, event: str) -> None:
        """Append a short event line (kept to the last 1000) and log it (``sdk.processor``)."""
        _log.info("%s", event, extra={"processor_event": event})
        self.events.append(event)
        if len(self.events) > 1000:
            del self.events[:100]
