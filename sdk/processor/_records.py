"""What a handler returns, the handler protocols, and the processor's counters."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol

__all__ = [
    "BatchHandler",
    "Handler",
    "OutputRecord",
    "ProcessorState",
    "ProcessorStats",
]

_log = logging.getLogger("sdk.processor")


@dataclass(frozen=True)
class OutputRecord:
    """One record a handler wants produced.

    Attributes:
        topic: Destination topic.
        value: Payload (bytes or str; None is a tombstone).
        key: Optional key (decides the partition with the producer's partitioner).
        headers: Optional headers as ``(name, value)`` pairs.
        partition: Explicit partition, or None to let the partitioner choose.
    """

    topic: str
    value: bytes | str | None
    key: bytes | str | None = None
    headers: Sequence[tuple[str, bytes | str | None]] | None = None
    partition: int | None = None


class Handler(Protocol):
    """Transform one consumed record (a ``confluent_kafka.Message``) into output records."""

    def __call__(self, record: Any, /) -> Iterable[OutputRecord]:
        """Return the records to produce for ``record`` (may be empty)."""
        ...


class BatchHandler(Protocol):
    """Transform one consumed batch (a list of ``confluent_kafka.Message``) into output records."""

    def __call__(self, records: list[Any], /) -> Iterable[OutputRecord]:
        """Return the records to produce for the whole batch (may be empty)."""
        ...


class ProcessorState(Enum):
    """Lifecycle of a :class:`~sdk.processor.Processor`; a closed processor refuses ``run()``."""

    CREATED = "created"
    RUNNING = "running"
    STOPPING = "stopping"
    CLOSED = "closed"


@dataclass
class ProcessorStats:
    """Counters of what the loop did; each error path increments its own counter.

    Attributes:
        records_in: Input records handled (a record re-read after an abort counts again).
        records_out: Output records produced (including dead-lettered ones).
        commits: Transactions committed (exactly_once) or offset commits/stores (other modes).
        aborts: Transactions aborted, for any reason.
        retries: Kafka calls retried because the error was retriable.
        abortable_recoveries: Abortable errors recovered by abort + rewind.
        fenced: Fatal/fenced producer errors seen.
        ambiguous: Commit/abort calls whose outcome was unknown.
        transaction_timeouts: Failures of a transaction older than transaction.timeout.ms.
        producer_recreations: Producers closed and created anew (init_transactions again).
        stalled_calls: Transactional calls that ignored their timeout (librdkafka #5456) and
            were abandoned; each is also counted in ``ambiguous``.
        handler_failures: Records (or batches) on which the handler failed every attempt.
        dead_lettered: Input records sent to the dead-letter topic.
        revoked: Rebalance revocations handled.
        lost: Partition losses handled.
        rewinds: Times the consumer was seeked back to its committed offsets.
        commit_refused: at_most_once: batches not handled because a rebalance refused their
            pre-handling commit or the group session was lost around it (rewound; see
            :mod:`sdk._membership`).
    """

    records_in: int = 0
    records_out: int = 0
    commits: int = 0
    aborts: int = 0
    retries: int = 0
    abortable_recoveries: int = 0
    fenced: int = 0
    ambiguous: int = 0
    transaction_timeouts: int = 0
    producer_recreations: int = 0
    stalled_calls: int = 0
    handler_failures: int = 0
    dead_lettered: int = 0
    revoked: int = 0
    lost: int = 0
    rewinds: int = 0
    commit_refused: int = 0
    events: list[str] = field(default_factory=list)

    def note(self, event: str) -> None:
        """Append a short event line (kept to the last 1000) and log it (``sdk.processor``)."""
        _log.info("%s", event, extra={"processor_event": event})
        self.events.append(event)
        if len(self.events) > 1000:
            del self.events[:100]
