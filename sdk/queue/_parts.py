"""What the queue's handling paths share: the policy, the decoder, the counters, the clock.

One :class:`QueueParts` per :class:`~sdk.queue.QueueConsumer`, held by each of its handling
paths (:mod:`sdk.queue._at_least_once`, :mod:`sdk.queue._at_most_once`,
:mod:`sdk.queue._manual`): they are composed around it, not mixed into the consumer.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from sdk._client import KafkaMessage, ShareConsumerClient
from sdk.consumer.engine import DeadLetterSink, RecordDecoder
from sdk.errors import SerializationError
from sdk.failure import HandlerRunner
from sdk.observability import Telemetry
from sdk.profiles import QueueProfile
from sdk.queue._client_api import AcknowledgeType
from sdk.queue._records import Outstanding, QueueStats
from sdk.queue._source import ShareSource
from sdk.records import ConsumerRecord

__all__ = ["LOCK_BUDGET", "QueueParts"]

_ACCEPT, _RELEASE = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE

LOCK_BUDGET = 0.8
"""at_least_once: records of a poll not started within this share of the record lock are
released instead of handled. A poll's records are acquired together and librdkafka 2.16 hands
out whole acquired batches (thousands of records, whatever ``max.poll.records`` says), so a
long poll would otherwise be handled after its locks expired: the broker would already have
given those records to another member, a duplicate for each."""


class QueueParts:
    """The queue's policy, decoder, dead-letter sink, counters and telemetry, and their helpers.

    Args:
        profile: The queue profile.
        stats: The queue's counters.
        decoder: Key and value deserializers.
        dlq: The dead-letter sink (None without ``failure.dlq_topic``).
        telemetry: Spans and metrics (None: none).
    """

    def __init__(
        self,
        profile: QueueProfile,
        stats: QueueStats,
        decoder: RecordDecoder,
        dlq: DeadLetterSink | None,
        telemetry: Telemetry | None,
    ) -> None:
        self.profile = profile
        self.guarantee = profile.guarantee
        self.stats = stats
        self.decoder = decoder
        self.dlq = dlq
        self.tel = telemetry
        self.runner = HandlerRunner(profile.failure, on_retry=self.count_retry)
        decoder.registry_wait.on_retry = self.count_registry_retry
        self.lock_ms = profile.record_lock_duration_ms or 30_000
        # the lock budget never releases a record on its broker's last delivery but one: the
        # broker archives a record at the delivery count limit, and a loss is worse than a
        # duplicate at_least_once
        self.spare = (profile.delivery_count_limit or 5) - 1
        # attach(): the QueueConsumer's source and engine are built with this object's helpers
        self.source: ShareSource
        self.commit: Callable[[ShareConsumerClient, str], set[tuple[str, int]]]
        self.stopped: Callable[[], bool]

    def attach(
        self,
        source: ShareSource,
        commit: Callable[[ShareConsumerClient, str], set[tuple[str, int]]],
        stopped: Callable[[], bool],
    ) -> None:
        """The share group's source, its acknowledgement commit and the engine's stop flag."""
        self.source = source
        self.commit = commit
        self.stopped = stopped
        # a stop ends a wait for the schema registry at once (the record is released unhandled)
        self.decoder.registry_wait.stopped = stopped

    def decode(self, msg: KafkaMessage) -> ConsumerRecord | SerializationError:
        """The record, or the error of a record that cannot be deserialized (counted)."""
        try:
            return self.decoder.decode(msg)
        except SerializationError as exc:
            self.stats.deserialization_failures += 1
            return exc

    def call(
        self, handler: Callable[[Any], object], record: ConsumerRecord, msg: KafkaMessage
    ) -> None:
        """The handler on one record, in a ``process`` span when tracing is on."""
        tel = self.tel
        if tel is None or not tel.tracing_enabled():
            handler(record)
            return
        with tel.process_span(
            msg.topic(),
            msg.partition(),
            msg.offset(),
            msg.key(),
            self.profile.group_id,
            msg.headers(),
        ):
            handler(record)

    def check_slow(self, msg: KafkaMessage) -> None:
        """Warn when a record is acknowledged after its lock may have expired.

        The records of one poll are acquired together, so the time counts from the poll: a
        slow handler late in a large poll overruns the lock as surely as one slow call.
        """
        held_ms = (time.monotonic() - self.source.polled_at) * 1000.0
        if held_ms <= self.lock_ms:
            return
        self.stats.slow_handlers += 1
        detail = (
            f"{msg.topic()}[{msg.partition()}]@{msg.offset()} was handled {held_ms:,.0f} ms "
            f"after its poll, longer than the record lock ({self.lock_ms:,} ms): the broker may "
            "have delivered it to another member meanwhile; raise record_lock_duration_ms or "
            "lower batch_size"
        )
        self.stats.note(detail, logging.WARNING)
        if self.tel is not None:
            self.tel.safeguard("slow_handler", detail)

    def over_budget(self, left: int) -> None:
        """Count and say that ``left`` records of a poll were released for the lock budget."""
        self.stats.lock_budget_releases += left
        self.stats.note(
            f"{left} record(s) of a poll released unhandled: "
            f"{LOCK_BUDGET:.0%} of the record lock ({self.lock_ms:,} ms) had passed since the "
            "poll; raise record_lock_duration_ms if this repeats"
        )

    def count_registry_retry(self) -> None:
        """A record's decoding is retried: the schema registry did not answer."""
        self.stats.registry_retries += 1
        if self.tel is not None:
            self.tel.retry("schema_registry")

    def count_retry(self) -> None:
        """A handler attempt is retried (counted, and a retry metric)."""
        self.stats.retries += 1
        if self.tel is not None:
            self.tel.retry("handler")

    def acker(
        self, client: ShareConsumerClient, msgs: list[KafkaMessage], pending: Outstanding
    ) -> Callable[[int, AcknowledgeType], None]:
        """``ack(i, kind)`` for a poll's records: each acknowledged once, counted by kind."""
        stats = self.stats

        def ack(i: int, kind: AcknowledgeType) -> None:
            if not pending.take(i):
                return  # already acknowledged: the broker takes one acknowledgement
            client.acknowledge(msgs[i], kind)
            if kind is _ACCEPT:
                stats.accepted += 1
            elif kind is _RELEASE:
                stats.released += 1
            else:
                stats.rejected += 1

        return ack

    def on_ack_commit(
        self, offsets: Mapping[TopicPartition, set[int]], exc: KafkaException | None
    ) -> None:
        """The share consumer's acknowledgement commit callback: a refusal counted and said."""
        if exc is None:
            return
        n = sum(len(v) for v in offsets.values())
        self.stats.ack_failures += n
        detail = (
            f"the broker refused {n} acknowledgement(s): {exc} (a lock expired, or the record "
            "went to another member): those records are delivered again"
        )
        self.stats.note(detail, logging.WARNING)
        if self.tel is not None:
            self.tel.safeguard("ack_failed", detail)
