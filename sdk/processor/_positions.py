"""The processor's input positions: its transactional id and the rewind after a failure.

The rewind seeks every assigned partition back to its committed offset after a transaction
was given up.
"""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END

from sdk._client import ConsumerClient, call_kafka, translating
from sdk.errors import ConfigurationError, KafkaClientError
from sdk.observability import Telemetry
from sdk.processor._records import ProcessorStats
from sdk.profiles import Guarantee, ProcessingProfile

__all__ = ["counting", "rewind_to_committed", "transactional_id_for"]


def counting(stats: ProcessorStats, telemetry: Telemetry | None) -> Callable[[str], None]:
    """An ``on_retry`` for :func:`sdk._client.call_kafka` that counts each retry."""

    def retried(context: str) -> None:
        stats.retries += 1
        if telemetry is not None:
            telemetry.retry(context)

    return retried


def transactional_id_for(
    profile: ProcessingProfile, explicit: str | None, instance_id: str | None
) -> str | None:
    """The processor's ``transactional.id`` (None unless exactly_once).

    Raises:
        ConfigurationError: exactly_once with neither a transactional id nor an instance id.
    """
    p = profile.producer
    if profile.guarantee is not Guarantee.EXACTLY_ONCE:
        return None
    tid = explicit or p.transactional_id
    if tid is None:
        if not instance_id:
            raise ConfigurationError(
                "instance_id: the profile has only transactional_id_prefix; pass a stable "
                "instance_id (or transactional_id)",
                field="instance_id",
            )
        tid = f"{p.transactional_id_prefix}{instance_id}"
    return tid


def rewind_to_committed(
    consumer: ConsumerClient,
    *,
    latest: bool,
    stats: ProcessorStats,
    timeout_s: float,
    telemetry: Telemetry | None = None,
) -> None:
    """Seek every assigned partition back to its committed offset (no rebalance wait).

    Args:
        consumer: The ``confluent_kafka.Consumer``.
        latest: Where a partition without a committed offset goes (auto.offset.reset=latest).
        stats: Counters (``rewinds``, ``retries``).
        timeout_s: Timeout of the ``committed()`` call.
        telemetry: Counts retries of the ``committed()`` call.

    Raises:
        KafkaClientError: ``committed()`` failed after retries.
    """
    assignment = consumer.assignment()
    if not assignment:
        return
    committed = call_kafka(
        lambda: consumer.committed(assignment, timeout_s),
        context="committed",
        on_retry=counting(stats, telemetry),
    )
    fallback = OFFSET_END if latest else OFFSET_BEGINNING
    for tp in committed:
        if tp.offset < 0:
            tp.offset = fallback
        try:
            with translating(f"seek {tp.topic}[{tp.partition}]"):
                consumer.seek(tp)
        except KafkaClientError as exc:  # not yet fetching: re-assigning sets the position
            stats.note(f"seek {tp.topic}[{tp.partition}] failed ({exc}); reassigning")
            consumer.incremental_unassign([tp])
            consumer.incremental_assign([tp])
    stats.rewinds += 1
