"""at_most_once on a queue: ACCEPT and commit a poll's records, then handle them.

A part of :class:`~sdk.queue.QueueConsumer` (composed, over its :class:`QueueParts`). Records
whose acknowledgement the broker refused are not handled (another member may get them); the
rest are never delivered again, so a handler failure is retried in process (the policy's
attempts and backoff) and then dead-lettered or raised, and a crash loses what was accepted
and not yet handled (at most one poll, ``batch_size`` records).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sdk._client import KafkaMessage, ShareConsumerClient
from sdk.errors import HandlerError, SdkError, SerializationError
from sdk.queue._client_api import AcknowledgeType
from sdk.queue._parts import QueueParts
from sdk.queue._records import Outstanding
from sdk.records import ConsumerRecord

__all__ = ["AtMostOnce"]


class AtMostOnce:
    """The at_most_once path of a :class:`~sdk.queue.QueueConsumer`.

    Args:
        parts: The queue's policy, decoder, counters and helpers.
    """

    def __init__(self, parts: QueueParts) -> None:
        self._q = parts

    def handle(
        self,
        client: ShareConsumerClient,
        handler: Callable[[Any], object],
        msgs: list[KafkaMessage],
        pending: Outstanding,
        batch: bool,
    ) -> None:
        pending.clear()
        keep = self.accept_first(client, msgs)
        done = 0
        try:
            if batch:
                decoded = [self.decode_or_dead_letter(m) for m in keep]
                records = [r for r in decoded if r is not None]
                if records:
                    self._amo_call(handler, records, [r.raw for r in records])
                    self._q.stats.handled += len(records)
                done = len(keep)
                return
            for msg in keep:
                if self._q.stopped():
                    break
                record = self.decode_or_dead_letter(msg)
                if record is not None:
                    self._amo_call(handler, record, [msg])
                    self._q.stats.handled += 1
                done += 1
        finally:
            self._q.stats.abandoned += len(keep) - done  # accepted, never handled: lost

    def accept_first(
        self, client: ShareConsumerClient, msgs: list[KafkaMessage]
    ) -> list[KafkaMessage]:
        """ACCEPT every record of a poll and commit that; return the records the broker took.

        Records of a partition whose acknowledgement the broker refused are not handed out
        (another member may get them).
        """
        for msg in msgs:
            client.acknowledge(msg, AcknowledgeType.ACCEPT)
        refused = self._q.commit(client, "at_most_once commit before handling")
        keep = [m for m in msgs if (m.topic(), m.partition()) not in refused]
        if len(keep) < len(msgs):
            self._q.stats.ack_refused += len(msgs) - len(keep)
            if self._q.tel is not None:
                self._q.tel.safeguard("ack_refused", f"{len(msgs) - len(keep)} records not handled")
        self._q.stats.accepted += len(keep)
        return keep

    def _amo_call(
        self, handler: Callable[[Any], object], arg: Any, msgs: list[KafkaMessage]
    ) -> None:
        try:
            self._q.runner.run(lambda a: (handler(a), None)[1], arg)
        except HandlerError as exc:
            self._dead_letter_accepted(msgs, exc, exc.attempts, "handler")

    def decode_or_dead_letter(self, msg: KafkaMessage) -> ConsumerRecord | None:
        record = self._q.decode(msg)
        if isinstance(record, SerializationError):
            self._dead_letter_accepted([msg], record, 0, "deserialize")
            return None
        return record

    def _dead_letter_accepted(
        self, msgs: list[KafkaMessage], error: SdkError, attempts: int, stage: str
    ) -> None:
        if stage == "handler":
            self._q.stats.handler_failures += len(msgs)
        if self._q.profile.failure.on_failure == "stop" or self._q.dlq is None:
            raise error  # already accepted: at_most_once loses it, and says so
        for m in msgs:
            self._q.dlq.send(m, error, attempts=attempts, stage=stage)
            self._q.stats.dead_lettered += 1
