"""at_least_once on a queue: handle, then ACCEPT; RELEASE while deliveries are left; REJECT.

A part of :class:`~sdk.queue.QueueConsumer` (composed, over its :class:`QueueParts`). A record is
acknowledged ACCEPT only after its handler succeeded. A retryable failure RELEASEs it, so the
broker delivers it again (``record.delivery_count`` grows), until the failure policy's
``attempts`` deliveries; then it is written to the dead-letter topic, if there is one, and
REJECTed. A dead-letter write that fails RELEASEs the record and the run raises: a record is
never rejected unless its dead-letter copy is acknowledged.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from itertools import islice
from typing import Any

from sdk._client import KafkaMessage, ShareConsumerClient
from sdk.errors import HandlerError, KafkaClientError, SdkError, SerializationError
from sdk.queue._client_api import AcknowledgeType
from sdk.queue._parts import LOCK_BUDGET, QueueParts
from sdk.queue._records import Outstanding
from sdk.records import ConsumerRecord, handle_run, view

__all__ = ["STOP_EVERY_S", "AtLeastOnce"]

_ACCEPT, _RELEASE, _REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT

# runs an iterator to its end, keeping nothing
_consume: Callable[[Iterable[object]], None] = deque[object](maxlen=0).extend

STOP_EVERY_S = 0.001
"""at_least_once ``run()`` checks for ``stop()`` once per this much handler time (and before the
first record of each poll), not before every record: as the Consumer, a stop is seen at most a
millisecond of handler time late (the next record, for a handler slower than that)."""


class AtLeastOnce:
    """The at_least_once path of a :class:`~sdk.queue.QueueConsumer`.

    Args:
        parts: The queue's policy, decoder, counters and helpers.
    """

    def __init__(self, parts: QueueParts) -> None:
        self._q = parts

    def each(
        self,
        client: ShareConsumerClient,
        handler: Callable[[Any], object],
        msgs: list[KafkaMessage],
        pending: Outstanding,
        ack: Callable[[int, AcknowledgeType], None],
    ) -> None:
        """The per-record hot loop: handle, then ACCEPT; a failure goes to :meth:`_failed`.

        Per poll, not per record: the tracing check, the lock budget's deadline; the
        handler's success path acknowledges straight on the client (``ack`` is for the rest).
        Without a deserializer or tracing (bytes in), the records run through
        :func:`sdk.records.handle_run` (the view, the handler's first attempt and the
        clock read per record) in runs of at most
        :data:`STOP_EVERY_S` of handler time that end before the lock budget; each run's
        records are then accepted together. The acknowledgements only queue locally until the
        next poll or commit sends them, so the broker sees the same thing as if each record were
        accepted right after its handler, and the Python loop per record stays short.
        """
        tel = self._q.tel if self._q.tel is not None and self._q.tel.tracing_enabled() else None
        raw, stopped, monotonic = self._q.decoder.raw, self._q.stopped, time.monotonic
        fast = raw and tel is None
        lock_end = self._q.source.polled_at + self._q.lock_ms / 1000.0
        budget = self._q.source.polled_at + self._q.lock_ms * LOCK_BUDGET / 1000.0
        acknowledge, accepted, over, now = client.acknowledge, 0, 0, monotonic()
        check_stop = now  # stop() is seen within STOP_EVERY_S of handler time
        finished = 0  # records before this index are acknowledged (here or through ack)
        i, n = 0, len(msgs)
        try:
            while i < n:
                finished = i
                if now >= check_stop:
                    if stopped():
                        break  # the rest is released by the caller: others need not wait
                    check_stop = now + STOP_EVERY_S
                if fast and now <= budget:
                    start = i
                    i, _, record, error = handle_run(
                        msgs,
                        i,
                        n,
                        n,
                        handler,
                        None,
                        ConsumerRecord,
                        min(check_stop, budget),
                        monotonic,
                    )
                    # the run's records are accepted together, from C (map): no Python
                    # bytecode per record; acknowledge's default type is ACCEPT
                    run = islice(msgs, start, i)
                    try:
                        _consume(map(acknowledge, run))
                    except BaseException:
                        j = i - 1 - sum(1 for _ in run)  # run is past the one that raised
                        finished, accepted = j + 1, accepted + j - start  # as below: not released
                        raise
                    finished, accepted = i, accepted + i - start
                    if error is not None and (record is None or not isinstance(error, Exception)):
                        raise error  # the view or the clock failed, or an interrupt
                    now = monotonic()
                    if now > lock_end:  # only the run's last record can have ended that late
                        self._q.check_slow(msgs[i if error is not None else i - 1])
                    if error is not None:  # the handler raised on msgs[i]
                        self.failed(error, [msgs[i]], [i], ack, record)
                        now = monotonic()  # a dead-letter write may have taken a while
                        i += 1
                    continue
                msg = msgs[i]
                i += 1
                if now > budget and (msg.delivery_count() or 1) < self._q.spare:
                    ack(i - 1, _RELEASE)  # before its lock expires mid-handling
                    over += 1
                    continue
                if raw:
                    record = view(ConsumerRecord, msg)
                else:
                    decoded = self._q.decode(msg)
                    if isinstance(decoded, SerializationError):
                        self.give_up([msg], [i - 1], ack, decoded, 0, "deserialize")
                        continue
                    record = decoded
                try:
                    if tel is None:
                        handler(record)
                    else:
                        self._q.call(handler, record, msg)
                except Exception as exc:
                    now = monotonic()
                    if now > lock_end:
                        self._q.check_slow(msg)
                    self.failed(exc, [msg], [i - 1], ack, record)
                    now = monotonic()  # a dead-letter write may have taken a while
                    continue
                now = monotonic()  # one clock read per record: this check and the next budget
                if now > lock_end:
                    self._q.check_slow(msg)  # acknowledged after its lock: maybe a duplicate
                finished = i  # as before: a refused acknowledgement is not released
                acknowledge(msg, _ACCEPT)
                accepted += 1
            else:
                finished = n
        finally:
            # what this loop accepted leaves ``pending`` here, once per poll, not per record
            # (a dict delete per record cost more than the acknowledgement itself)
            pending.taken_before(finished)
            self._q.stats.handled += accepted
            self._q.stats.accepted += accepted
            if over:
                self._q.over_budget(over)

    def batch(
        self,
        handler: Callable[[Any], object],
        msgs: list[KafkaMessage],
        ack: Callable[[int, AcknowledgeType], None],
    ) -> None:
        records, taken = [], []
        for i, msg in enumerate(msgs):
            record = self._q.decode(msg)
            if isinstance(record, SerializationError):
                self.give_up([msg], [i], ack, record, 0, "deserialize")
            else:
                records.append(record)
                taken.append(i)
        if not records:
            return
        try:
            handler(records)
        except Exception as exc:
            self._q.check_slow(msgs[taken[0]])
            self.failed(exc, [msgs[i] for i in taken], taken, ack, records)
            return
        self._q.check_slow(msgs[taken[0]])
        self._q.stats.handled += len(records)
        for i in taken:
            ack(i, _ACCEPT)

    def failed(
        self,
        exc: Exception,
        msgs: list[KafkaMessage],
        idx: list[int],
        ack: Callable[[int, AcknowledgeType], None],
        arg: Any,
    ) -> None:
        deliveries = max(m.delivery_count() or 1 for m in msgs)
        if self._q.runner.retryable(exc) and deliveries < self._q.profile.failure.attempts:
            self._q.count_retry()
            for i in idx:
                ack(i, _RELEASE)  # the broker delivers it again; delivery_count grows
            return
        attempts = self._q.profile.failure.attempts
        error = HandlerError(
            f"handler failed on delivery {deliveries} of {attempts}: {exc!r}",
            record=arg,
            attempts=deliveries,
        )
        error.__cause__ = exc
        self.give_up(msgs, idx, ack, error, deliveries, "handler")

    def give_up(
        self,
        msgs: list[KafkaMessage],
        idx: list[int],
        ack: Callable[[int, AcknowledgeType], None],
        error: SdkError,
        attempts: int,
        stage: str,
    ) -> None:
        """The policy gave up: dead-letter and REJECT, or RELEASE and raise (``stop``)."""
        if stage == "handler":
            self._q.stats.handler_failures += len(msgs)
        if self._q.profile.failure.on_failure == "stop" or self._q.dlq is None:
            self._q.stats.note(f"stopping: {error}", logging.ERROR)
            raise error  # the records are released on the way out (never lost)
        for m, i in zip(msgs, idx, strict=True):
            try:
                self._q.dlq.send(m, error, attempts=attempts, stage=stage)
            except KafkaClientError as exc:
                self._q.stats.dead_letter_failures += 1
                self._q.stats.note(f"dead-letter write failed, record released: {exc}")
                raise  # released on the way out, not rejected: the record stays in the queue
            self._q.stats.dead_lettered += 1
            if self._q.tel is not None:
                self._q.tel.dead_lettered(
                    m.topic(), self._q.dlq.topic, error_type=type(error.__cause__ or error).__name__
                )
            ack(i, _REJECT)
