"""at_most_once on a queue: ACCEPT and commit a poll's records, then handle them.

A mixin of :class:`~sdk.queue.QueueConsumer` (kept apart to keep modules short). Records
whose acknowledgement the broker refused are not handled (another member may get them); the
rest are never delivered again, so a handler failure is retried in process (the policy's
attempts and backoff) and then dead-lettered or raised, and a crash loses what was accepted
and not yet handled (at most one poll, ``batch_size`` records).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sdk._client import KafkaMessage, ShareConsumerClient
from sdk.consumer.engine import DeadLetterSink
from sdk.errors import HandlerError, SdkError, SerializationError
from sdk.failure import HandlerRunner
from sdk.observability import Telemetry
from sdk.profiles import QueueProfile
from sdk.queue._client_api import AcknowledgeType
from sdk.queue._records import Outstanding, QueueStats
from sdk.records import ConsumerRecord

__all__ = ["AtMostOnceHandling"]


class AtMostOnceHandling:
    """Mixin of :class:`~sdk.queue.QueueConsumer`: the at_most_once path.

    What it needs from the class is declared below (set by ``QueueConsumer.__init__``).
    """

    profile: QueueProfile
    stats: QueueStats
    _runner: HandlerRunner
    _dlq: DeadLetterSink | None
    _tel: Telemetry | None
    _stopped: Callable[[], bool]
    _commit: Callable[[ShareConsumerClient, str], set[tuple[str, int]]]
    _decode: Callable[[KafkaMessage], ConsumerRecord | SerializationError]

    def _handle_at_most_once(
        self,
        client: ShareConsumerClient,
        handler: Callable[[Any], object],
        msgs: list[KafkaMessage],
        pending: Outstanding,
        batch: bool,
    ) -> None:
        pending.clear()
        keep = self._accept_first(client, msgs)
        done = 0
        try:
            if batch:
                decoded = [self._decode_or_dead_letter(m) for m in keep]
                records = [r for r in decoded if r is not None]
                if records:
                    self._amo_call(handler, records, [r.raw for r in records])
                    self.stats.handled += len(records)
                done = len(keep)
                return
            for msg in keep:
                if self._stopped():
                    break
                record = self._decode_or_dead_letter(msg)
                if record is not None:
                    self._amo_call(handler, record, [msg])
                    self.stats.handled += 1
                done += 1
        finally:
            self.stats.abandoned += len(keep) - done  # accepted, never handled: lost

    def _accept_first(
        self, client: ShareConsumerClient, msgs: list[KafkaMessage]
    ) -> list[KafkaMessage]:
        """ACCEPT every record of a poll and commit that; return the records the broker took.

        Records of a partition whose acknowledgement the broker refused are not handed out
        (another member may get them).
        """
        for msg in msgs:
            client.acknowledge(msg, AcknowledgeType.ACCEPT)
        refused = self._commit(client, "at_most_once commit before handling")
        keep = [m for m in msgs if (m.topic(), m.partition()) not in refused]
        if len(keep) < len(msgs):
            self.stats.ack_refused += len(msgs) - len(keep)
            if self._tel is not None:
                self._tel.safeguard("ack_refused", f"{len(msgs) - len(keep)} records not handled")
        self.stats.accepted += len(keep)
        return keep

    def _amo_call(
        self, handler: Callable[[Any], object], arg: Any, msgs: list[KafkaMessage]
    ) -> None:
        try:
            self._runner.run(lambda a: (handler(a), None)[1], arg)
        except HandlerError as exc:
            self._dead_letter_accepted(msgs, exc, exc.attempts, "handler")

    def _decode_or_dead_letter(self, msg: KafkaMessage) -> ConsumerRecord | None:
        record = self._decode(msg)
        if isinstance(record, SerializationError):
            self._dead_letter_accepted([msg], record, 0, "deserialize")
            return None
        return record

    def _dead_letter_accepted(
        self, msgs: list[KafkaMessage], error: SdkError, attempts: int, stage: str
    ) -> None:
        if stage == "handler":
            self.stats.handler_failures += len(msgs)
        if self.profile.failure.on_failure == "stop" or self._dlq is None:
            raise error  # already accepted: at_most_once loses it, and says so
        for m in msgs:
            self._dlq.send(m, error, attempts=attempts, stage=stage)
            self.stats.dead_lettered += 1
