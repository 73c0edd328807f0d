"""Manual acknowledgement on a queue: :meth:`QueueConsumer.records` and :meth:`~.ack`.

A part of :class:`~sdk.queue.QueueConsumer` (composed, over its :class:`QueueParts`). ``run()``
acknowledges for the application; here the application does, record by record, and the SDK
keeps the guarantee's side of it:

* ``at_least_once``: a record is yielded unacknowledged; ``ack(record, "accept" | "release" |
  "reject")`` settles it. A record not acknowledged when the next poll begins (or when the
  iteration ends) is released, so it is delivered again, never lost: ``stats.unacknowledged``
  counts it, with a warning. librdkafka refuses a poll while any record of the previous one is
  unacknowledged, which is why the SDK releases them rather than let the poll fail.
* ``at_most_once``: every record of a poll is accepted and the acceptance committed before the
  first is yielded (as in ``run()``); ``ack(record)`` is then a no-op, and a release or
  reject is an error: the record is gone from the queue.

A second acknowledgement of the same delivery, or one for a record of an earlier poll, raises
:class:`~sdk.errors.AcknowledgementError` naming the record and what happened to it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Literal

from sdk._client import KafkaMessage, ShareConsumerClient
from sdk.consumer.engine import ConsumeLoop
from sdk.errors import AcknowledgementError, ConfigurationError, SerializationError
from sdk.profiles import Guarantee
from sdk.queue._at_least_once import AtLeastOnce
from sdk.queue._at_most_once import AtMostOnce
from sdk.queue._client_api import AcknowledgeType
from sdk.queue._parts import QueueParts
from sdk.records import ConsumerRecord

__all__ = ["AckOutcome", "ManualAcknowledgement"]

AckOutcome = Literal["accept", "release", "reject"]
"""How a queue record is settled (``QueueConsumer.ack``)."""
_KINDS = {
    "accept": AcknowledgeType.ACCEPT,
    "release": AcknowledgeType.RELEASE,
    "reject": AcknowledgeType.REJECT,
}
_Key = tuple[str, int, int]
_AUTO_RELEASED = "released unacknowledged"


def _key(msg: KafkaMessage) -> _Key:
    return (msg.topic(), msg.partition(), msg.offset())


def _where(key: _Key) -> str:
    return f"{key[0]}[{key[1]}]@{key[2]}"


class ManualAcknowledgement:
    """``records()`` and ``ack()`` of a :class:`~sdk.queue.QueueConsumer`.

    Args:
        parts: The queue's policy, decoder, counters and helpers.
        loop: The queue's engine (its runs, polls and stop).
        at_most_once: The at_most_once path (accept and commit before handing out).
        at_least_once: The at_least_once path (its failure policy).
    """

    def __init__(
        self,
        parts: QueueParts,
        loop: ConsumeLoop[ShareConsumerClient],
        at_most_once: AtMostOnce,
        at_least_once: AtLeastOnce,
    ) -> None:
        self._q = parts
        self._loop = loop
        self._amo = at_most_once
        self._alo = at_least_once
        self._in_flight: dict[_Key, KafkaMessage] = {}
        self._settled: dict[_Key, str] = {}
        self._ack_client: ShareConsumerClient | None = None

    def records(
        self,
        max_records: int | None,
        idle_s: float | None,
        handle_sigterm: bool,
    ) -> Iterator[ConsumerRecord]:
        """:meth:`QueueConsumer.records <sdk.queue.QueueConsumer.records>`."""
        self._in_flight, self._settled = {}, {}
        loop = self._loop
        with loop.running(handle_sigterm) as client:
            self._ack_client = client
            try:
                before = self._before_poll
                for msgs in loop.batches(max_records, idle_s, before_poll=before):
                    assert client is not None  # batches come from a subscribed client only
                    self._settled = {}
                    yield from self._hand_out(client, msgs)
                    del msgs  # not kept alive through the next poll (see QueueConsumer._run)
            finally:
                self._release_unacknowledged()
                self._ack_client = None

    def _before_poll(self, client: ShareConsumerClient) -> None:
        # librdkafka refuses a poll while a record of the previous one is unacknowledged
        self._release_unacknowledged()

    def _hand_out(
        self, client: ShareConsumerClient, msgs: list[KafkaMessage]
    ) -> Iterator[ConsumerRecord]:
        if self._q.guarantee is Guarantee.AT_MOST_ONCE:
            keep = self._amo.accept_first(client, msgs)
            self._settled = dict.fromkeys(map(_key, keep), "accept")
            done = 0
            try:
                for msg in keep:
                    done += 1
                    record = self._amo.decode_or_dead_letter(msg)
                    if record is not None:
                        self._q.stats.handled += 1  # handed out, never delivered again
                        yield record
            finally:
                self._q.stats.abandoned += len(keep) - done  # accepted, never handed out: lost
            return
        self._in_flight = {_key(m): m for m in msgs}
        for msg in msgs:
            if self._q.stopped():
                return  # the rest is released before the next poll or on the way out
            decoded = self._q.decode(msg)
            if isinstance(decoded, SerializationError):
                self._alo.give_up([msg], [0], self._settler(msg), decoded, 0, "deserialize")
                continue
            yield decoded

    def ack(self, record: ConsumerRecord, outcome: AckOutcome = "accept") -> None:
        """:meth:`QueueConsumer.ack <sdk.queue.QueueConsumer.ack>`."""
        kind = _KINDS.get(outcome)
        if kind is None:
            raise ConfigurationError(
                f"ack: outcome must be 'accept', 'release' or 'reject', got {outcome!r}",
                field="outcome",
            )
        key = (record.topic, record.partition, record.offset)
        msg = self._in_flight.pop(key, None)
        if msg is None:
            error = self._not_in_flight(record, key, outcome)
            if error is not None:
                raise error
            return  # at_most_once accepted it already
        self._settle(msg, kind)

    def _not_in_flight(
        self, record: ConsumerRecord, key: _Key, outcome: str
    ) -> AcknowledgementError | None:
        settled = self._settled.get(key)
        if self._q.guarantee is Guarantee.AT_MOST_ONCE and settled == "accept":
            if outcome == "accept":
                return None
            return AcknowledgementError(
                f"ack: {_where(key)} cannot be {outcome}d: at_most_once accepted it (and "
                "committed that) before handing it out; it is gone from the queue",
                record=record,
            )
        if settled == _AUTO_RELEASED:
            return AcknowledgementError(
                f"ack: {_where(key)} is no longer held by this consumer: it was not "
                "acknowledged before the next poll began (or the iteration ended), so it was "
                "released and will be delivered again; acknowledge each record before taking "
                "the next poll's",
                record=record,
            )
        if settled is not None:
            return AcknowledgementError(
                f"ack: {_where(key)} was already acknowledged ({settled}); a share group takes "
                "one acknowledgement per delivery",
                record=record,
            )
        return AcknowledgementError(
            f"ack: {_where(key)} is not held by this consumer: it is from an earlier poll "
            "or was never handed out by records()",
            record=record,
        )

    def _settler(self, msg: KafkaMessage) -> Callable[[int, AcknowledgeType], None]:
        """An ``ack(i, kind)`` for one record (the failure policy's acknowledgement)."""

        def settle(_i: int, kind: AcknowledgeType) -> None:
            self._settle(msg, kind)

        return settle

    def _settle(self, msg: KafkaMessage, kind: AcknowledgeType, settled: str = "release") -> None:
        key = _key(msg)
        self._in_flight.pop(key, None)
        client = self._ack_client
        assert client is not None  # records() holds it while it hands records out
        client.acknowledge(msg, kind)
        if kind is AcknowledgeType.ACCEPT:
            self._q.check_slow(msg)  # acknowledged after its lock: maybe a duplicate
            self._q.stats.accepted += 1
            self._q.stats.handled += 1
            self._settled[key] = "accept"
        elif kind is AcknowledgeType.RELEASE:
            self._q.stats.released += 1
            self._settled[key] = settled
        else:
            self._q.stats.rejected += 1
            self._settled[key] = "reject"

    def _release_unacknowledged(self) -> None:
        left = list(self._in_flight.values())
        if not left or self._ack_client is None:
            return
        for msg in left:
            self._settle(msg, AcknowledgeType.RELEASE, _AUTO_RELEASED)
        self._q.stats.unacknowledged += len(left)
        first = _where(_key(left[0]))
        self._q.stats.note(
            f"{len(left)} record(s) not acknowledged before the next poll (first {first}): "
            "released, they will be delivered again; call ack(record, ...) for each record "
            "records() yields",
            logging.WARNING,
        )
