"""The Processor's handling loop: a polled batch through the handler into the session.

A mixin of :class:`~sdk.processor.Processor` (its own methods, kept apart to keep modules
short). :meth:`HandlingLoop._handle_records` is the hot path of a per-record handler without
tracing: the handler's first attempt inline, no per-record span or poll.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, TypeVar

from sdk._client import KafkaMessage
from sdk.core.session import TransactionSession
from sdk.errors import HandlerError, KafkaClientError
from sdk.failure import HandlerRunner, dead_letter
from sdk.observability import Telemetry
from sdk.processor._records import BatchHandler, Handler, OutputRecord, ProcessorStats
from sdk.profiles import Guarantee, ProcessingProfile
from sdk.records import ConsumerRecord, handle_run, last_positions, view

if TYPE_CHECKING:
    from opentelemetry.trace import Span

A = TypeVar("A")
"""What a handler takes: a record, or a batch of them."""

__all__ = ["HandlingLoop"]

_EOS = Guarantee.EXACTLY_ONCE


class HandlingLoop:
    """Mixin of :class:`~sdk.processor.Processor`: handle a batch, produce its outputs.

    What it needs from the class is declared below (set by ``Processor.__init__``).
    """

    profile: ProcessingProfile
    guarantee: Guarantee
    stats: ProcessorStats
    _handler: Handler | None
    _batch_handler: BatchHandler | None
    _tel: Telemetry
    _txn: TransactionSession
    _runner: HandlerRunner
    _group: str
    _positions: dict[tuple[str, int], int]
    _pending: int
    _last_commit: float
    _due: Callable[[], bool]
    _commit_or_recover: Callable[[], bool]
    _recover: Callable[[KafkaClientError], None]
    _abort_and_rewind: Callable[..., None]

    def _handle(self, records: list[KafkaMessage]) -> None:
        if self._batch_handler is not None:
            batch = [view(ConsumerRecord, m) for m in records]
            self._handle_unit(batch, self._batch_handler, records)
        elif self._tel.tracing_enabled():
            self._handle_traced(records)
        else:
            self._handle_records(records)
        try:
            self._txn.serve()  # delivery reports, once per batch
        except KafkaClientError as exc:
            if self.guarantee is not _EOS:
                raise
            self._recover(exc)

    def _handle_traced(self, records: list[KafkaMessage]) -> None:
        """Per-record handler with a ``process`` span per record."""
        handler = self._handler
        assert handler is not None
        for i, msg in enumerate(records):
            # the Consumer's record type: handlers of both read record.value, record.raw, ...
            if not self._handle_unit(view(ConsumerRecord, msg), handler, [msg]):
                return  # rewound: the rest of the batch is re-read
            if self._due() and i + 1 < len(records) and not self._commit_or_recover():
                return

    def _handle_records(self, records: list[KafkaMessage]) -> None:
        """Per-record handler without tracing: the hot loop.

        The same steps as :meth:`_handle_unit` per record, with the per-record costs taken
        out: no span context manager, the handler's first attempt inline (the failure policy
        takes over only when it raises), outputs queued without a poll each (:meth:`_handle`
        serves delivery reports once per batch) and counters added per run of records. The
        per-record steps run in :func:`~sdk.records.handle_run` ;
        this method takes over when a record raised and at the commit points.
        """
        handler = self._handler
        assert handler is not None
        txn, stats = self._txn, self.stats
        eos = self.guarantee is _EOS
        limit = self.profile.max_records_per_transaction
        interval_s = self.profile.commit_interval_ms / 1000.0
        monotonic = time.monotonic
        n, i = len(records), 0
        while i < n:
            if eos and not txn.open:
                try:
                    txn.begin()
                except KafkaClientError as exc:
                    self._recover(exc)
                    return
            span, start, due_at = txn.span, i, self._last_commit + interval_s
            emit, produced = txn.emitter(), 0
            # records[marked:i] are handled but not yet in the positions and the pending
            # count: those are brought up to date once per run of records, not per record
            marked, room = i, limit - self._pending
            rewound = False  # the recovery below rewinds: nothing of this run is kept then
            try:
                while True:
                    # the per-record steps run in handle_run; it comes
                    # back here when the run stops, or with what records[i] raised
                    stop = min(marked + room, n)
                    i, emitted, record, error = handle_run(
                        records, i, n, stop, handler, emit, ConsumerRecord, due_at, monotonic
                    )
                    produced += emitted
                    if error is None:
                        break
                    if record is None or not isinstance(error, Exception):
                        raise error  # the view, emit or the clock; KeyboardInterrupt and such
                    # the policy may commit (on_failure="stop"): the records before count
                    self._mark(records, marked, i)
                    marked, room = i, limit - self._pending
                    for out in self._retry_or_fail(handler, record, error):
                        emit(out)
                        produced += 1
                    i += 1
                    if i >= n or i - marked >= room or monotonic() >= due_at:
                        break
            except KafkaClientError as exc:
                # produce() refuses (_STATE) once a delivery failed in this transaction; the
                # seam classified that as abortable
                if not eos:
                    raise
                rewound = True
                self._recover(exc)  # what this transaction handled is read again
                return
            finally:
                # also on the way out through an exception: a revoke then commits what was
                # handled (at_least_once), as when positions were kept per record
                if not rewound:
                    self._mark(records, marked, i)
                stats.records_in += i - start
                stats.records_out += produced
                if span is not None:
                    span.add_input(i - start)
            if i < n and not self._commit_or_recover():
                return

    def _mark(self, records: list[KafkaMessage], start: int, stop: int) -> None:
        """``records[start:stop]`` were handled: their next offsets, their pending count."""
        if stop > start:
            last_positions(records[start:stop], self._positions)
            self._pending += stop - start

    def _retry_or_fail(
        self, handler: Handler, record: ConsumerRecord, first: Exception
    ) -> list[OutputRecord]:
        """The failure policy after a first attempt failed: retries, then DLQ or stop."""
        try:
            return self._runner.retry(handler, record, first)
        except HandlerError as exc:
            return self._handler_failed(exc, [record.raw])

    def _handler_failed(self, exc: HandlerError, msgs: list[KafkaMessage]) -> list[OutputRecord]:
        """Every attempt failed: the dead-letter outputs, or stop (commit/abort, then raise).

        Raises:
            HandlerError: ``on_failure="stop"`` or no dead-letter topic.
        """
        self.stats.handler_failures += 1
        failure = self.profile.consumer.failure
        if failure.on_failure == "stop" or failure.dlq_topic is None:
            self.stats.note(f"handler failed, stopping: {exc}")
            if self.guarantee is _EOS:
                self._abort_and_rewind(cause=exc)
            else:
                self._commit_or_recover()
            raise exc
        outputs = [
            dead_letter(m, failure.dlq_topic, exc, attempts=exc.attempts, stage="handler")
            for m in msgs
        ]
        self.stats.dead_lettered += len(msgs)
        cause = type(exc.__cause__ or exc).__name__
        for m in msgs:
            self._tel.dead_lettered(m.topic(), failure.dlq_topic, error_type=cause)
        return outputs

    def _handle_unit(
        self, arg: A, fn: Callable[[A], Iterable[OutputRecord]], msgs: list[KafkaMessage]
    ) -> bool:
        """Handle one record (or batch); return False if the transaction was rewound."""
        if self.guarantee is _EOS:
            try:
                self._txn.begin()
            except KafkaClientError as exc:
                self._recover(exc)
                return False
        with self._process_span(arg, msgs):
            try:
                outputs = self._runner.run(fn, arg)
            except HandlerError as exc:
                outputs = self._handler_failed(exc, msgs)
            try:
                for out in outputs:
                    self._produce(out)
            except KafkaClientError as exc:
                # produce() refuses (_STATE) once a delivery failed in this transaction; the
                # seam classified that as abortable
                if self.guarantee is not _EOS:
                    raise
                self._recover(exc)
                return False
        last_positions(msgs, self._positions)
        self.stats.records_in += len(msgs)
        self._pending += len(msgs)
        if self._txn.span is not None:
            self._txn.span.add_input(len(msgs))
        return True

    def _process_span(self, arg: object, msgs: list[KafkaMessage]) -> AbstractContextManager[Span]:
        """``process <topic>`` per record, or one span per batch linking every record."""
        tx = self._txn.span
        if isinstance(arg, list):
            return self._tel.batch_process_span(msgs, self._group, transaction=tx)
        m = msgs[0]
        return self._tel.process_span(
            m.topic(), m.partition(), m.offset(), m.key(), self._group, m.headers(), transaction=tx
        )

    def _produce(self, out: OutputRecord) -> None:
        """Produce one output through the session (a ``send <topic>`` span when traced)."""
        self._txn.produce(out)
        self.stats.records_out += 1
