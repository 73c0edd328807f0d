"""The one recovery decision: which path a failed transactional call takes.

Used by every exactly-once front end through :meth:`sdk.core.session.TransactionSession.recover`.
It is a pure function of the error and sits in the bottom layer, beside the errors
(``sdk.core.recovery`` is its deprecated old place, removed in 0.3). The error's type decides
first, because the type is what the broker told us; the age of the transaction only separates a
timeout from a plain abortable error:

1. :class:`~sdk.errors.AmbiguousTransactionError` (a commit/abort/offsets call without a known
   outcome, a stalled call): never reuse the producer; a new epoch resolves it.
2. fatal, or :class:`~sdk.errors.ProducerFencedError` without ``txn_requires_abort``: another
   instance owns the transactional.id (or the producer is unusable): raise or recreate. If the
   transaction is older than ``transaction.timeout.ms`` the fence is the coordinator's own
   abort of it (Kafka 4.3.1 answers a timed-out transaction with a fatal ``_FENCED`` "old
   epoch"): it is counted as fenced *and* as a timeout, and the client is recreated even
   under ``on_fenced="raise"``, since no other instance need own the id.
3. the open transaction is older than ``transaction.timeout.ms``: the coordinator aborted it
   and bumped the epoch; recreate.
4. a second failure without a commit in between: librdkafka can keep a sequence gap (e.g.
   OUT_OF_ORDER_SEQUENCE_NUMBER after a refused record); a new epoch resets it.
5. anything else (abortable, or another non-retriable error): abort and rewind.
"""

from __future__ import annotations

import enum

from sdk.errors import AmbiguousTransactionError, KafkaClientError, ProducerFencedError

__all__ = ["Recovery", "decide"]


class Recovery(enum.Enum):
    """The path a failed transactional call takes (each is counted in its own stat)."""

    AMBIGUOUS = "ambiguous"
    FENCED = "fenced"
    FENCED_TIMED_OUT = "fenced_timed_out"
    TIMED_OUT = "timed_out"
    REPEATED = "repeated"
    ABORT = "abort"

    @property
    def recreates(self) -> bool:
        """Whether the path makes a new producer (new epoch) rather than aborting."""
        return self is not Recovery.ABORT


def decide(
    error: KafkaClientError,
    *,
    transaction_age_ms: float,
    transaction_timeout_ms: int,
    failures_in_a_row: int,
) -> Recovery:
    """Classify a failed transactional call (see the module docstring for the order).

    Args:
        error: The translated error.
        transaction_age_ms: How long the open transaction has been open (0 if none is).
        transaction_timeout_ms: The producer's ``transaction.timeout.ms``.
        failures_in_a_row: Failures since the last commit, this one included.

    Returns:
        The recovery path.
    """
    if isinstance(error, AmbiguousTransactionError):
        return Recovery.AMBIGUOUS
    timed_out = transaction_age_ms >= transaction_timeout_ms
    if error.fatal or (isinstance(error, ProducerFencedError) and not error.txn_requires_abort):
        return Recovery.FENCED_TIMED_OUT if timed_out else Recovery.FENCED
    if timed_out:
        return Recovery.TIMED_OUT
    if failures_in_a_row > 1:
        return Recovery.REPEATED
    return Recovery.ABORT
