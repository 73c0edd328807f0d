"""The processor's input positions: the rewind after a failure, and the retry counter.

The rewind seeks every assigned partition back to its committed offset after a transaction
was given up.
"""

from __future__ import annotations

from collections.abc import Callable

from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, TopicPartition

from sdk._assignment import reassign
from sdk._client import ConsumerClient, call_kafka, translating
from sdk.errors import KafkaClientError, KafkaTimeoutError, is_transient
from sdk.observability import Telemetry
from sdk.processor._records import ProcessorStats

__all__ = ["counting", "rewind_to_committed"]


def counting(stats: ProcessorStats, telemetry: Telemetry | None) -> Callable[[str], None]:
    """An ``on_retry`` for :func:`sdk._client.call_kafka` that counts each retry."""

    def retried(context: str) -> None:
        stats.retries += 1
        if telemetry is not None:
            telemetry.retry(context)

    return retried


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

    A ``committed()`` that still fails transiently after its retries (a coordinator
    connection whose answers were dropped stays silent until librdkafka tears it down) does not
    stop the processor: the partitions are assigned again instead, and librdkafka reads their
    committed offsets itself before it fetches any of their records.

    Raises:
        KafkaClientError: ``committed()`` failed with an error that is not transient.
    """
    assignment = consumer.assignment()
    if not assignment:
        return
    try:
        committed = call_kafka(
            lambda: consumer.committed(assignment, timeout_s),
            context="committed",
            on_retry=counting(stats, telemetry),
        )
    except KafkaClientError as exc:
        if not (isinstance(exc, KafkaTimeoutError) or is_transient(exc.kafka_error)):
            raise
        stats.note(f"committed offsets not read ({exc}); reassigning {len(assignment)}")
        reassign(consumer, assignment)
        stats.rewinds += 1
        return
    fallback = OFFSET_END if latest else OFFSET_BEGINNING
    refused: list[TopicPartition] = []
    for tp in committed:
        if tp.offset < 0:
            tp.offset = fallback
        try:
            with translating(f"seek {tp.topic}[{tp.partition}]"):
                consumer.seek(tp)
        except KafkaClientError as exc:  # not yet fetching: re-assigning sets the position
            stats.note(f"seek {tp.topic}[{tp.partition}] failed ({exc}); reassigning")
            refused.append(tp)
    if refused:  # in one call: under the eager protocol each call replaces the assignment
        reassign(consumer, refused)
    stats.rewinds += 1
