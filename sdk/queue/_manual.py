"""Manual acknowledgement on a queue: :meth:`QueueConsumer.records` and :meth:`~.ack`.

A mixin of :class:`~sdk.queue.QueueConsumer` (kept apart to keep modules short). ``run()``
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
from sdk._deprecation import renamed
from sdk.consumer.engine import ConsumeLoop
from sdk.errors import AcknowledgementError, ConfigurationError, SerializationError
from sdk.profiles import Guarantee, QueueProfile
from sdk.queue._client_api import AcknowledgeType
from sdk.queue._records import QueueStats
from sdk.records import ConsumerRecord

__all__ = ["ManualAcknowledgement", "Outcome"]

Outcome = Literal["accept", "release", "reject"]
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
    """Mixin of :class:`~sdk.queue.QueueConsumer`: ``records()`` and ``ack()``.

    What it needs from the class is declared below (set by ``QueueConsumer.__init__``).
    """

    profile: QueueProfile
    guarantee: Guarantee
    stats: QueueStats
    _stopped: Callable[[], bool]
    _loop: ConsumeLoop[ShareConsumerClient]
    _decode: Callable[[KafkaMessage], ConsumerRecord | SerializationError]
    _check_slow: Callable[[KafkaMessage], None]
    _accept_first: Callable[[ShareConsumerClient, list[KafkaMessage]], list[KafkaMessage]]
    _decode_or_dead_letter: Callable[[KafkaMessage], ConsumerRecord | None]
    _give_up: Callable[..., None]

    # set on first use (QueueConsumer.__init__ need not know about them)
    _in_flight: dict[_Key, KafkaMessage]
    _settled: dict[_Key, str]
    _ack_client: ShareConsumerClient | None

    def records(
        self,
        *,
        max_records: int | None = None,
        idle_timeout_s: float | None = None,
        handle_sigterm: bool = False,
        idle_timeout: float | None = None,
    ) -> Iterator[ConsumerRecord]:
        """Yield the queue's records; settle each with :meth:`ack` (see the module docstring).

        Call :meth:`ack` from the thread that iterates (a share consumer is not thread-safe).

        Args:
            max_records: Return after taking this many records from the queue.
            idle_timeout_s: Return after this many seconds without a record.
            handle_sigterm: Turn SIGTERM into :meth:`stop` (main thread only). Off by
                default here, unlike ``run()``: a loop that leaves the iteration early would
                keep SIGTERM turned into :meth:`stop` until the iterator is closed.
            idle_timeout: Deprecated name of ``idle_timeout_s``.

        Yields:
            Each record (deserialized); a poison pill is not yielded: the failure policy
            dead-letters and rejects it (or raises, releasing it).

        Raises:
            ClosedError: The consumer is closed.
            SerializationError: A poison pill with ``on_failure="stop"``.
            KafkaClientError: A poll, acknowledgement commit or dead-letter write failed.
        """
        idle_s = renamed(
            "QueueConsumer.records", "idle_timeout", idle_timeout, "idle_timeout_s", idle_timeout_s
        )
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
        if self.guarantee is Guarantee.AT_MOST_ONCE:
            keep = self._accept_first(client, msgs)
            self._settled = dict.fromkeys(map(_key, keep), "accept")
            done = 0
            try:
                for msg in keep:
                    done += 1
                    record = self._decode_or_dead_letter(msg)
                    if record is not None:
                        self.stats.handled += 1  # handed out, never delivered again
                        yield record
            finally:
                self.stats.abandoned += len(keep) - done  # accepted, never handed out: lost
            return
        self._in_flight = {_key(m): m for m in msgs}
        for msg in msgs:
            if self._stopped():
                return  # the rest is released before the next poll or on the way out
            decoded = self._decode(msg)
            if isinstance(decoded, SerializationError):
                self._give_up(
                    [msg],
                    [0],
                    lambda _i, kind, m=msg: self._settle(m, kind),
                    decoded,
                    0,
                    "deserialize",
                )
                continue
            yield decoded

    def ack(self, record: ConsumerRecord, outcome: Outcome = "accept") -> None:
        """Settle one record of :meth:`records`: accept, release (redeliver) or reject it.

        Args:
            record: A record the iterator yielded, from its latest poll.
            outcome: ``"accept"`` (done), ``"release"`` (delivered again, its delivery count
                one higher) or ``"reject"`` (never delivered again).

        Raises:
            ConfigurationError: ``outcome`` is not one of the three.
            AcknowledgementError: The record was acknowledged already, is from an earlier
                poll (released when the next one began), or, at_most_once, a release or
                reject of a record accepted before it was handed out.
        """
        kind = _KINDS.get(outcome)
        if kind is None:
            raise ConfigurationError(
                f"ack: outcome must be 'accept', 'release' or 'reject', got {outcome!r}",
                field="outcome",
            )
        key = (record.topic, record.partition, record.offset)
        msg = getattr(self, "_in_flight", {}).pop(key, None)
        if msg is None:
            error = self._not_in_flight(record, key, outcome)
            if error is not None:
                raise error
            return  # at_most_once accepted it already
        self._settle(msg, kind)

    def _not_in_flight(
        self, record: ConsumerRecord, key: _Key, outcome: str
    ) -> AcknowledgementError | None:
        settled = getattr(self, "_settled", {}).get(key)
        if self.guarantee is Guarantee.AT_MOST_ONCE and settled == "accept":
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

    def _settle(self, msg: KafkaMessage, kind: AcknowledgeType, settled: str = "release") -> None:
        key = _key(msg)
        self._in_flight.pop(key, None)
        client = self._ack_client
        assert client is not None  # records() holds it while it hands records out
        client.acknowledge(msg, kind)
        if kind is AcknowledgeType.ACCEPT:
            self._check_slow(msg)  # acknowledged after its lock: maybe a duplicate
            self.stats.accepted += 1
            self.stats.handled += 1
            self._settled[key] = "accept"
        elif kind is AcknowledgeType.RELEASE:
            self.stats.released += 1
            self._settled[key] = settled
        else:
            self.stats.rejected += 1
            self._settled[key] = "reject"

    def _release_unacknowledged(self) -> None:
        left = list(getattr(self, "_in_flight", {}).values())
        if not left or getattr(self, "_ack_client", None) is None:
            return
        for msg in left:
            self._settle(msg, AcknowledgeType.RELEASE, _AUTO_RELEASED)
        self.stats.unacknowledged += len(left)
        first = _where(_key(left[0]))
        self.stats.note(
            f"{len(left)} record(s) not acknowledged before the next poll (first {first}): "
            "released, they will be delivered again; call ack(record, ...) for each record "
            "records() yields",
            logging.WARNING,
        )
