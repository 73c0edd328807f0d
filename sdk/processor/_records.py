"""What a handler returns, the handler protocols, and the processor's counters."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from sdk.errors import ConfigurationError
from sdk.records import ConsumerRecord, Output, OutputRecord, TransactionStats

__all__ = [
    "BatchHandler",
    "Handler",
    "OutputRecord",
    "ProcessorStats",
]


class Handler(Protocol):
    """Transform one consumed record into output records (as a Consumer handler gets it)."""

    def __call__(self, record: ConsumerRecord, /) -> Iterable[Output]:
        """Return the records to produce for ``record`` (may be empty)."""
        ...


class BatchHandler(Protocol):
    """Transform one consumed batch (a list of :class:`ConsumerRecord`) into output records."""

    def __call__(self, records: list[ConsumerRecord], /) -> Iterable[Output]:
        """Return the records to produce for the whole batch (may be empty)."""
        ...


@dataclass
class ProcessorStats(TransactionStats):
    """Counters of what the loop did; each error path increments its own counter.

    The transaction counters (``aborts``, ``retries``, ``abortable_recoveries``, ``fenced``,
    ``ambiguous``, ``transaction_timeouts``, ``producer_recreations``, ``stalled_calls``,
    ``events``) come from :class:`sdk.records.TransactionStats`, which the transactional
    session updates.

    Attributes:
        polled: Records taken from Kafka.
        records_in: Input records handled (a record re-read after an abort counts again).
        records_out: Output records produced (including dead-lettered ones).
        commits: Transactions committed (exactly_once) or offset commits/stores (other modes).
        handler_failures: Records (or batches) on which the handler failed every attempt.
        dead_lettered: Input records sent to the dead-letter topic.
        deserialization_failures: Input records whose key or value could not be deserialized
            (with ``key_deserializer``/``value_deserializer``).
        registry_retries: Decodings of an input, or serializations of an output, retried
            because the schema registry did not answer (never counted as failures).
        revoked: Rebalance revocations handled.
        lost: Partition losses handled.
        rewinds: Times the consumer was seeked back to its committed offsets.
        commit_refused: at_most_once: batches not handled because a rebalance refused their
            pre-handling commit or the group session was lost around it (rewound; see
            :mod:`sdk.consumer._at_most_once`).
        redelivered: at_most_once: records dropped because the client delivered them again
            below a position already committed before handling; handing them out again
            would duplicate them.
    """

    polled: int = 0
    records_in: int = 0
    records_out: int = 0
    commits: int = 0
    handler_failures: int = 0
    dead_lettered: int = 0
    deserialization_failures: int = 0
    registry_retries: int = 0
    revoked: int = 0
    lost: int = 0
    rewinds: int = 0
    commit_refused: int = 0
    redelivered: int = 0


def chosen_handler(
    handler: Handler | None,
    batch_handler: BatchHandler | None,
    kept: Handler | None,
    kept_batch: BatchHandler | None,
) -> tuple[Handler | None, BatchHandler | None]:
    """The handlers of a run: those given to it, or those the deprecated constructor kept.

    Raises:
        ConfigurationError: No handler at all, or one here and one in the constructor.
    """
    given = handler is not None or batch_handler is not None
    if given and (kept is not None or kept_batch is not None):
        raise ConfigurationError(
            "handler: given to both Processor() and run(); give it to run() only",
            field="handler",
        )
    if not given and kept is None and kept_batch is None:
        raise ConfigurationError(
            "handler: give the handler to run(handler) (or run_batch(handler))",
            field="handler",
        )
    return (handler, batch_handler) if given else (kept, kept_batch)
