"""The Consumer's handling of a polled batch: per record (``run``) or as a batch.

What the :class:`~sdk.consumer.Consumer` does with a batch the engine
(:class:`~sdk.consumer._loop.ConsumeLoop`) polled and admitted; the offset keeper decides when
it is committed. :meth:`RecordHandling._plain` is the hot path without telemetry.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor

from sdk._client import ConsumerClient, KafkaMessage
from sdk.consumer._commits import OffsetKeeper
from sdk.consumer._failure import FailurePath
from sdk.consumer._loop import ConsumeLoop
from sdk.consumer._records import ConsumerRecord
from sdk.profiles import Guarantee
from sdk.records import handle_run

__all__ = ["RecordHandling"]


_ALO = Guarantee.AT_LEAST_ONCE
STORE_EVERY_S = 0.001
"""at_least_once, hot loop: the handled prefix is stored at least this often (handler time)."""


class RecordHandling:
    """Hand a batch's records to the handler (one by one, or at once), then store.

    Args:
        loop: The Consumer's engine (client, stop, the batch in flight, telemetry).
        failure: Decoding and the failure policy.
        offsets: Where handled records' offsets go.
    """

    store_every_s = STORE_EVERY_S
    """The same bound for a hot loop of another front end's (``sdk.aio`` on the loop)."""

    def __init__(
        self,
        loop: ConsumeLoop[ConsumerClient],
        failure: FailurePath,
        offsets: OffsetKeeper,
        group_id: str,
    ) -> None:
        self._loop = loop
        self._failure = failure
        self._offsets = offsets
        self.guarantee = offsets.guarantee
        self._group = group_id

    def each(
        self,
        handler: Callable[[ConsumerRecord], object],
        messages: list[KafkaMessage],
        ahead: int = 0,
        finished: int = 0,
    ) -> None:
        """Handle each record of a polled batch.

        ``ahead``: how many records (from the first) had their handler run already
        (``sdk.aio``); they are finished even after a stop. ``finished``: how many of those
        (from the first) succeeded: they are counted and stored, the handler is not called.
        """
        tel = self._loop.observed()
        if tel is None:
            self._plain(handler, messages, ahead, finished)
            return
        for message in messages:
            if self._loop.stopped() and self.guarantee is _ALO:
                return  # not stored: read again by the next run or the next owner
            if tel is None:
                record = self._failure.decode(message)
                if record is not None:
                    self._failure.handle(handler, record, [message])
            else:
                with tel.process_span(
                    message.topic(),
                    message.partition(),
                    message.offset(),
                    message.key(),
                    self._group,
                    message.headers(),
                ):
                    record = self._failure.decode(message)
                    if record is not None:
                        self._failure.handle(handler, record, [message])
            self._done([message])  # stored per record: the commit timer sees every step

    def _plain(
        self,
        handler: Callable[[ConsumerRecord], object],
        messages: list[KafkaMessage],
        ahead: int = 0,
        finished: int = 0,
    ) -> None:
        """The hot loop without telemetry.

        The same steps as the traced loop, without the per-record costs: the handler's first
        attempt inline (the failure policy takes over only when it raises) and counters added
        per batch. at_least_once stores the handled prefix of the batch whenever
        :data:`STORE_EVERY_S` passed since the last store (so after every record of a handler
        slower than that), and at the end of the batch, also after a stop or an error: an
        offset is still stored only after its record was handled, and the commit timer sees
        progress within a millisecond of handler time. (Storing after every record would cost
        as much as the rest of the loop.) A :meth:`stop` is seen at those
        stores, so at most a millisecond of handler time after it (the next record, for a
        handler slower than that); the rest of the batch is not stored and is read again.
        The first ``ahead`` records, whose handlers already ran (``sdk.aio`` runs a batch's
        handlers in one loop crossing), are finished even after a stop: not storing them
        would only hand them out again; of those, the first ``finished`` succeeded and are
        only counted and stored. Without a deserializer (bytes in), the per-record steps
        (the view, the handler's first attempt, the clock read) run in
        :func:`sdk.records.handle_run`, one tight loop shared with the Processor.
        """
        loop = self._loop
        failure, offsets, client = self._failure, self._offsets, loop.client
        raw, alo, stopped = failure.decoder.raw, self.guarantee is _ALO, loop.stopped
        store = alo and client is not None
        monotonic = time.monotonic
        last_store = monotonic()
        done, stored = finished, 0
        others = 0  # finished but not by the handler's first attempt (counted where handled)
        try:
            if alo and stopped():
                if not ahead:
                    return  # not stored: read again by the next run or the next owner
                messages = messages[:ahead]  # their handlers ran; the rest is read again
            n = len(messages)
            while done < n:
                if raw:  # view, handler and clock per record in handle_run
                    done, _, record, error = handle_run(
                        messages,
                        done,
                        n,
                        n,
                        handler,
                        None,  # what a handler returns is ignored
                        ConsumerRecord,
                        last_store + STORE_EVERY_S,
                        monotonic if store else None,  # None: no clock read, runs to n
                    )
                    if error is not None:
                        if record is None or not isinstance(error, Exception):
                            raise error  # the view or the clock failed, or an interrupt
                        failure.handle(handler, record, [messages[done]], error)
                        others += 1
                        done += 1
                else:
                    message = messages[done]
                    decoded = failure.decode(message)
                    if decoded is None:  # a poison pill, dead-lettered
                        done += 1
                        others += 1
                        continue
                    try:
                        handler(decoded)
                    except Exception as first:
                        failure.handle(handler, decoded, [message], first)
                        others += 1
                    done += 1
                if store:
                    now = monotonic()
                    if now - last_store >= STORE_EVERY_S:
                        offsets.handled(client, messages[stored:done])  # type: ignore[arg-type]
                        stored, last_store = done, now
                        if stopped() and done >= ahead:
                            return  # the rest is not stored: read again
        finally:
            failure.stats.handled += done - others
            loop.in_flight -= done
            if store and done > stored:
                offsets.handled(client, messages[stored:done])  # type: ignore[arg-type]

    def batch(
        self, handler: Callable[[list[ConsumerRecord]], object], messages: list[KafkaMessage]
    ) -> None:
        records: list[ConsumerRecord] = []
        taken: list[KafkaMessage] = []
        for message in messages:
            record = self._failure.decoder.try_decode(message)
            if record is not None:
                records.append(record)
                taken.append(message)
                continue
            if records:  # keep the offset order: handle what came before the poison pill
                self._failure.handle(handler, records, taken)
                self._done(taken)
                records, taken = [], []
            self._failure.decode(message)  # applies the failure policy to the poison pill
            self._done([message])
        if records:
            tel = self._loop.observed()
            if tel is None:
                self._failure.handle(handler, records, taken)
            else:
                with tel.batch_process_span(taken, self._group):
                    self._failure.handle(handler, records, taken)
            self._done(taken)

    def batch_split(
        self,
        handler: Callable[[list[ConsumerRecord]], object],
        messages: list[KafkaMessage],
        pool: ThreadPoolExecutor,
        groups: int,
        key_of: Callable[[KafkaMessage], Hashable] | None,
    ) -> None:
        """``run_batch(concurrency=N)``: sub-batches by ordering key, handled at the same time.

        The batch is split into up to ``groups`` sub-batches by ordering key (``key_of``;
        None: unordered), handled on ``pool``. Records of one key (or partition) are in one
        sub-batch, in offset order. Poison pills go through the failure policy first. The
        batch's offsets are stored once every sub-batch is done; if one failed for good
        (``on_failure="stop"``), none is stored and its error is raised after the others
        finished (the whole batch is read again).
        """
        failure = self._failure
        split: list[tuple[list[ConsumerRecord], list[KafkaMessage]]] = [
            ([], []) for _ in range(groups)
        ]
        for i, message in enumerate(messages):
            record = failure.decoder.try_decode(message)
            if record is None:
                failure.decode(message)  # the policy: dead-lettered, or raised
                continue
            records, taken = split[(hash(key_of(message)) if key_of else i) % groups]
            records.append(record)
            taken.append(message)
        tel = self._loop.observed()

        def handle(records: list[ConsumerRecord], taken: list[KafkaMessage]) -> None:
            if tel is None:
                failure.handle(handler, records, taken)
                return
            with tel.batch_process_span(taken, self._group):
                failure.handle(handler, records, taken)

        futures = [pool.submit(handle, r, t) for r, t in split if r]
        errors = [f.exception() for f in futures]
        error = next((e for e in errors if e is not None), None)
        if error is not None:
            raise error
        self._done(messages)

    def _done(self, messages: list[KafkaMessage]) -> None:
        """The records are handled or dead-lettered: store their offsets (at_least_once)."""
        loop = self._loop
        loop.in_flight -= len(messages)
        if loop.client is not None:
            self._offsets.handled(loop.client, messages)
