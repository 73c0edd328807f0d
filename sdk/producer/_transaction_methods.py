"""The Producer's public transaction methods: each one step of its transactional side.

The steps themselves (the calls, their retries, the bound against a stuck call, the spans) are
:class:`~sdk.producer._transactions.TransactionalOutput`'s; these functions are the Producer's
public face of them, deprecated keywords and argument checks included. The
:class:`~sdk.producer.Producer` class body binds them (``begin_transaction =
_txn.begin_transaction``), so they are its own methods: one class composed of objects, no mixin.
"""

# ruff: noqa: D417  (each function is a Producer method: its self is not an argument to document)

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, TypeVar

from confluent_kafka import TopicPartition

from sdk._client import GroupMetadata
from sdk._deprecation import renamed_default
from sdk.errors import SdkError, TransactionError
from sdk.observability import Telemetry
from sdk.producer._transactions import TransactionalOutput, transaction_block
from sdk.records import TransactionStats

if TYPE_CHECKING:
    from sdk.producer._producer import Producer

__all__ = [
    "abort_transaction",
    "begin_transaction",
    "commit_transaction",
    "init_transactions",
    "send_offsets_to_transaction",
    "transaction",
    "transactional_output",
]

P = TypeVar("P", bound="Producer")


def transactional_output(
    self: Producer, *, stats: TransactionStats, telemetry: Telemetry | None
) -> TransactionalOutput:
    """This producer's transactional side, reporting to ``stats`` and ``telemetry``.

    The one interface the transactional session (:mod:`sdk.core.session`) drives the
    producer by; the transaction methods below are its steps, one call each.

    Args:
        stats: Where retries and stalled calls are counted.
        telemetry: The span per transaction, retry and safeguard metrics (None: none).

    Returns:
        The producer's :class:`~sdk.producer._transactions.TransactionalOutput`.
    """
    output = self._output
    output.stats, output.telemetry = stats, telemetry
    return output


def init_transactions(
    self: Producer, timeout_s: float = 60.0, *, timeout: float | None = None
) -> None:
    """Register the transactional id with the coordinator (fences older instances).

    Called automatically by the first :meth:`begin_transaction`.

    Args:
        timeout_s: Seconds to wait.
        timeout: Deprecated name of ``timeout_s``, removed in 0.3.

    Raises:
        ConfigurationError: The profile is not exactly_once.
        TransactionError: The coordinator refused (subclass says why).
    """
    where = "Producer.init_transactions"
    timeout_s = renamed_default(where, "timeout", timeout, "timeout_s", timeout_s)
    self._output.checked().start(timeout_s)


def begin_transaction(self: Producer) -> None:
    """Start a transaction (initializing transactions first if needed).

    Raises:
        TransactionError: librdkafka refused (e.g. one is already open).
    """
    output = self._output.checked()
    if output.open:
        raise TransactionError("begin_transaction: a transaction is already open")
    output.begin()


def send_offsets_to_transaction(
    self: Producer,
    offsets: Sequence[TopicPartition],
    group_metadata: GroupMetadata,
    timeout_s: float = 30.0,
    *,
    timeout: float | None = None,
) -> None:
    """Commit consumer offsets as part of the open transaction (KIP-447 fencing).

    Args:
        offsets: ``TopicPartition`` objects holding the *next* offset to read.
        group_metadata: ``consumer.consumer_group_metadata()`` of the consuming member.
        timeout_s: Seconds to wait.
        timeout: Deprecated name of ``timeout_s``, removed in 0.3.

    Raises:
        TransactionAbortableError: Abort and rewind (e.g. the member was fenced).
        TransactionError: Other refusals.
    """
    where = "Producer.send_offsets_to_transaction"
    timeout_s = renamed_default(where, "timeout", timeout, "timeout_s", timeout_s)
    self._output.checked().send_offsets(offsets, group_metadata, timeout_s)


def commit_transaction(
    self: Producer, timeout_s: float = 60.0, *, timeout: float | None = None
) -> None:
    """Flush and commit the open transaction.

    Args:
        timeout_s: Seconds to wait.
        timeout: Deprecated name of ``timeout_s``, removed in 0.3.

    Raises:
        TransactionAbortableError: The transaction must be aborted.
        AmbiguousTransactionError: The outcome is unknown: close and recreate the producer
            (a new ``init_transactions`` resolves it; see docs/processor.md).
        ProducerFencedError: Another instance owns the transactional id.
    """
    where = "Producer.commit_transaction"
    timeout_s = renamed_default(where, "timeout", timeout, "timeout_s", timeout_s)
    output = self._output.checked()
    try:
        output.commit(timeout_s)
    except SdkError as exc:
        output.end_span("unknown", exc)
        raise


def abort_transaction(
    self: Producer, timeout_s: float = 60.0, *, timeout: float | None = None
) -> None:
    """Abort the open transaction; its records are never visible to read_committed readers.

    Args:
        timeout_s: Seconds to wait.
        timeout: Deprecated name of ``timeout_s``, removed in 0.3.

    Raises:
        TransactionError: The abort failed (subclass says why).
    """
    where = "Producer.abort_transaction"
    timeout_s = renamed_default(where, "timeout", timeout, "timeout_s", timeout_s)
    self._output.checked().abort(timeout=timeout_s)


def transaction(
    self: P, timeout_s: float = 60.0, *, timeout: float | None = None
) -> AbstractContextManager[P]:
    """Run the block in one transaction: commit if it succeeds, abort if it raises.

    Example::

        with producer.transaction():
            producer.send("out", b"1")
            producer.send("out", b"2")      # both visible, or neither

    Args:
        timeout_s: Seconds the commit (or the abort) may take.
        timeout: Deprecated name of ``timeout_s``, removed in 0.3.

    Raises:
        TransactionError: Begin, commit or abort failed (the block's own exception wins
            when both happen).
    """
    where = "Producer.transaction"
    timeout_s = renamed_default(where, "timeout", timeout, "timeout_s", timeout_s)
    return transaction_block(self, timeout_s)
