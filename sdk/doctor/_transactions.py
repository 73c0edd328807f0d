"""exactly_once: the profile's transaction timeout against the broker and the poll interval."""

from __future__ import annotations

from sdk.doctor._facts import ConfigValue, Unreadable
from sdk.doctor._report import Check, Status

__all__ = ["judge_poll_interval", "judge_transaction_timeout"]


def judge_transaction_timeout(
    transaction_timeout_ms: int, broker_max: ConfigValue | Unreadable
) -> Check:
    """The producer's ``transaction.timeout.ms`` against ``transaction.max.timeout.ms``.

    Args:
        transaction_timeout_ms: The profile's ``transaction_timeout_ms``.
        broker_max: The broker's ``transaction.max.timeout.ms``.
    """
    name = "transaction timeout"
    if isinstance(broker_max, Unreadable) or broker_max.value is None:
        reason = broker_max.reason if isinstance(broker_max, Unreadable) else "no value"
        return Check(
            name,
            Status.WARN,
            f"profile transaction_timeout_ms {transaction_timeout_ms}; could not read the "
            f"broker's transaction.max.timeout.ms: {reason}",
        )
    limit = int(broker_max.value)
    found = (
        f"profile transaction_timeout_ms {transaction_timeout_ms}, broker "
        f"transaction.max.timeout.ms {limit}"
    )
    if transaction_timeout_ms <= limit:
        return Check(name, Status.PASS, found)
    return Check(
        name,
        Status.FAIL,
        found,
        "the coordinator refuses a transaction timeout above its maximum: init_transactions() "
        "fails (INVALID_TRANSACTION_TIMEOUT) and the producer never starts",
        f"transaction_timeout_ms: {limit} (or less) in the profile, or raise "
        "transaction.max.timeout.ms in server.properties of every broker (a rolling restart)",
    )


def judge_poll_interval(max_poll_interval_ms: int, transaction_timeout_ms: int) -> Check:
    """A processing profile's ``max_poll_interval_ms`` against its transaction timeout.

    The Processor keeps one polled batch in one transaction. A batch that takes longer than
    the transaction timeout is aborted by the coordinator while the member, still within its
    poll interval, stays in the group: it rewinds and handles the same batch again, as slowly.
    With the poll interval at or below the timeout the member leaves the group first and the
    partitions move on.
    """
    name = "poll interval vs transaction timeout"
    found = (
        f"consumer max_poll_interval_ms {max_poll_interval_ms}, producer "
        f"transaction_timeout_ms {transaction_timeout_ms}"
    )
    if max_poll_interval_ms <= transaction_timeout_ms:
        return Check(name, Status.PASS, found)
    return Check(
        name,
        Status.WARN,
        found,
        "a batch whose handling outlasts the transaction timeout is aborted by the coordinator "
        "while the member stays in the group; it is handled again from the committed offset, "
        "and if it is always that slow, the partition never moves on (no loss, no duplicate, "
        "no progress)",
        f"consumer: {{max_poll_interval_ms: {transaction_timeout_ms}}} in the profile, or a "
        "longer producer transaction_timeout_ms (up to the broker's "
        "transaction.max.timeout.ms), or a smaller batch_size",
    )
