"""The Processor's handling: a polled batch through the handler into the session.

What the :class:`~sdk.processor.Processor` does with a batch the engine polled and admitted;
:class:`~sdk.processor._commits.TransactionCommits` decides when it is committed.
:meth:`TransactionHandling._handle_records` is the hot path of a per-record handler without
tracing: the handler's first attempt inline, no per-record span or poll.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, TypeVar

from sdk._client import KafkaMessage
from sdk._deadline import Deadline
from sdk.consumer import Ordering
from sdk.consumer.engine import RecordDecoder, RegistryWait, timed_out
from sdk.core.session import TransactionSession
from sdk.errors import (
    HandlerError,
    KafkaClientError,
    SchemaRegistryUnavailableError,
    SdkError,
    SerializationError,
)
from sdk.failure import HandlerRunner, dead_letter
from sdk.observability import Telemetry
from sdk.processor._commits import TransactionCommits
from sdk.processor._concurrent import BatchPool
from sdk.processor._records import (
    BatchHandler,
    Handler,
    ProcessorStats,
    chosen_handler,
)
from sdk.profiles import Guarantee, ProcessingProfile
from sdk.records import ConsumerRecord, Output, bound_emit_run, bound_run, last_positions, view

if TYPE_CHECKING:
    from opentelemetry.trace import Span

A = TypeVar("A")
"""What a handler takes: a record, or a batch of them."""

__all__ = ["TransactionHandling"]

_EOS = Guarantee.EXACTLY_ONCE


class TransactionHandling:
    """Run the handler on a batch and queue its outputs in the session.

    Args:
        profile: The processing profile.
        stats: The Processor's counters.
        telemetry: Spans and metrics.
        txn: The session the outputs go through.
        runner: The failure policy's retries.
        commits: The pending work (positions, count) and the commit points.
        decoder: The key and value deserializers; None: the handler gets bytes (the hot
            path).
        handler: The handler the (deprecated) constructor got, if any.
        batch_handler: Same, for a batch handler.
        outputs_wait: With key or value serializers: retries an output's serialization while
            the schema registry does not answer (None: bytes out, nothing to wait for).
    """

    def __init__(
        self,
        profile: ProcessingProfile,
        stats: ProcessorStats,
        telemetry: Telemetry,
        txn: TransactionSession,
        runner: HandlerRunner,
        commits: TransactionCommits,
        decoder: RecordDecoder | None = None,
        handler: Handler | None = None,
        batch_handler: BatchHandler | None = None,
        outputs_wait: RegistryWait | None = None,
    ) -> None:
        self.profile = profile
        self.guarantee = profile.guarantee
        self.stats = stats
        self._tel = telemetry
        self._txn = txn
        self._runner = runner
        self._commits = commits
        self._decoder = decoder
        self._group = profile.consumer.group_id
        self._handler = handler
        self._batch_handler = batch_handler
        self._pool: BatchPool | None = None
        self._outputs_wait = outputs_wait
        # sdk.aio (bridged): the first records' outputs, their handlers run; taken by the hot loop
        self.precomputed: Callable[[], Sequence[Iterable[Output] | None]] | None = None
        # when the hot loop stops for a commit: passed once the commit interval is over
        self._due = Deadline()

    def close(self) -> None:
        """End the run's deadline thread (the Processor's close)."""
        self._due.close()

    @contextmanager
    def concurrently(
        self,
        concurrency: int,
        ordering: Ordering,
        stop: Callable[[], None],
        timeout_s: float | None = None,
    ) -> Iterator[None]:
        """A run whose per-record handlers run on ``concurrency`` threads (1: inline).

        ``timeout_s``: a handler still running after it fails the record (no retry): its
        dead-letter output, or stop.
        """
        if concurrency == 1:
            yield
            return

        def given_up(msg: KafkaMessage) -> HandlerError:
            assert timeout_s is not None  # BatchPool gives up records only with a timeout
            return timed_out(msg, timeout_s, view(ConsumerRecord, msg))

        self._pool = BatchPool(concurrency, ordering, self._compute, stop, timeout_s, given_up)
        try:
            yield
        finally:
            pool, self._pool = self._pool, None
            pool.close()

    @property
    def decoder(self) -> RecordDecoder | None:
        """The deserializers (None: bytes in, the handler gets a view of each message)."""
        return self._decoder

    def use(self, handler: Handler | None, batch_handler: BatchHandler | None) -> None:
        """Take the handler of a run (or keep the one the deprecated constructor got).

        Raises:
            ConfigurationError: No handler at all, or one here and one in the constructor.
        """
        self._handler, self._batch_handler = chosen_handler(
            handler, batch_handler, self._handler, self._batch_handler
        )

    def handle(
        self,
        records: list[KafkaMessage],
        computed: Sequence[Iterable[Output] | None] | None = None,
    ) -> None:
        """Handle an admitted batch: outputs queued, positions marked, commits when due.

        ``computed``: the outputs of the first records, whose handlers ran (sdk.aio).
        """
        if self._pool is not None:
            self._handle_concurrently(records, self._pool)
        elif self._decoder is not None:
            self._handle_decoded(records, self._decoder)
        elif self._batch_handler is not None:
            batch = [view(ConsumerRecord, m) for m in records]
            self._handle_unit(batch, self._batch_handler, records)
        elif self._tel.tracing_enabled():
            self._handle_traced(records)
        else:
            self._handle_records(records, computed)
        if (failed := self.serve()) is not None:
            self._commits.recover(failed)

    def serve(self) -> KafkaClientError | None:
        """Serve delivery reports (once per batch); exactly_once returns a failure to recover.

        Raises:
            KafkaClientError: A failure outside exactly_once.
        """
        try:
            self._txn.serve()
        except KafkaClientError as exc:
            if self.guarantee is not _EOS:
                raise
            return exc
        return None

    def _handle_decoded(self, records: list[KafkaMessage], decoder: RecordDecoder) -> None:
        """Deserialized records: a poison pill goes through the failure policy in order.

        Its dead-letter record is an output of the same transaction, so it is committed with
        the offsets around it (or not at all); with ``on_failure="stop"`` the run stops as it
        does for a handler that failed every attempt.
        """
        batch_handler, commits = self._batch_handler, self._commits
        decoded: list[ConsumerRecord] = []
        taken: list[KafkaMessage] = []
        for i, msg in enumerate(records):
            try:
                record = decoder.decode(msg)
            except SerializationError as exc:
                # the records before it first: offsets stay in order
                if decoded and batch_handler is not None:
                    if not self._handle_unit(decoded, batch_handler, taken):
                        return
                    decoded, taken = [], []
                if not self._poison(exc, msg):
                    return
            else:
                if batch_handler is not None:
                    decoded.append(record)
                    taken.append(msg)
                    continue
                assert self._handler is not None
                if not self._handle_unit(record, self._handler, [msg]):
                    return  # rewound: the rest of the batch is re-read
            more = i + 1 < len(records)
            if batch_handler is None and more and commits.due() and not commits.commit_or_recover():
                return
        if decoded and batch_handler is not None:
            self._handle_unit(decoded, batch_handler, taken)

    def _compute(self, msg: KafkaMessage) -> object:
        """On a pool thread: the record's outputs, or the error the policy must decide on."""
        try:
            record = (
                view(ConsumerRecord, msg) if self._decoder is None else self._decoder.decode(msg)
            )
        except SerializationError as exc:
            return exc
        assert self._handler is not None
        try:
            return self._runner.run(self._handler, record)
        except HandlerError as exc:
            return exc

    def _handle_concurrently(self, records: list[KafkaMessage], pool: BatchPool) -> None:
        """The batch's outputs computed on the pool, then through the transaction in order.

        Nothing of the batch is produced before all of it was handled, so a transaction
        holds only outputs of records whose offsets it commits.
        """
        results = pool.run(records)
        commits, last = self._commits, len(records) - 1
        for i, (msg, result) in enumerate(zip(records, results, strict=True)):
            if isinstance(result, SerializationError):
                ok = self._poison(result, msg)
            else:
                outputs: list[Output] = (
                    self._handler_failed(result, [msg])
                    if isinstance(result, HandlerError)
                    else result  # type: ignore[assignment]  # what _compute returned
                )
                ok = self._handle_unit(msg, _computed(outputs), [msg])
            if not ok:
                return  # rewound: the rest of the batch is read (and handled) again
            if i < last and commits.due() and not commits.commit_or_recover():
                return

    def _poison(self, exc: SerializationError, msg: KafkaMessage) -> bool:
        """A record that cannot be deserialized: dead-lettered in the transaction, or stop.

        Raises:
            SerializationError: ``on_failure="stop"`` or no dead-letter topic (after the
                commit of what came before, or the abort, as for a failed handler).
        """
        self.stats.deserialization_failures += 1
        topic = self._dead_letter_topic_or_stop(exc, "record cannot be deserialized")
        self.stats.dead_lettered += 1
        self._tel.dead_lettered(msg.topic(), topic, error_type=type(exc.__cause__ or exc).__name__)
        out = dead_letter(msg, topic, exc, attempts=0, stage="deserialize")
        return self._handle_unit(msg, lambda _m: [out], [msg])

    def _handle_traced(self, records: list[KafkaMessage]) -> None:
        """Per-record handler with a ``process`` span per record."""
        handler = self._handler
        assert handler is not None
        for i, msg in enumerate(records):
            # the Consumer's record type: handlers of both read record.value, record.raw, ...
            if not self._handle_unit(view(ConsumerRecord, msg), handler, [msg]):
                return  # rewound: the rest of the batch is re-read
            if (
                self._commits.due()
                and i + 1 < len(records)
                and not self._commits.commit_or_recover()
            ):
                return

    def _handle_records(
        self,
        records: list[KafkaMessage],
        computed: Sequence[Iterable[Output] | None] | None = None,
    ) -> None:
        """Per-record handler without tracing: the hot loop, a run of records per commit."""
        if computed is None:
            computed = () if self.precomputed is None else self.precomputed()
        i, n = 0, len(records)
        while i < n:
            i, failed = self.run_until_due(records, i, n, computed)
            if failed is not None:
                self._commits.recover(failed)  # what this transaction handled is read again
                return
            if i < n and not self._commits.commit_or_recover():
                return

    def run_until_due(
        self,
        records: list[KafkaMessage],
        i: int,
        end: int,
        computed: Sequence[Iterable[Output] | None] = (),
    ) -> tuple[int, KafkaClientError | None]:
        """Handle ``records[i:end]`` up to the next commit point; return where it stopped.

        The same steps as :meth:`_handle_unit` per record, with the per-record costs taken
        out: no span context manager, the handler's first attempt inline (the failure policy
        takes over only when it raises), outputs queued without a poll each (:meth:`handle`
        serves delivery reports once per batch) and counters added per run of records. The
        per-record steps run in the emitter's :func:`~sdk.records.handle_run` (or, for the first
        ``len(computed)`` records, whose handlers ran already, :func:`~sdk.records.emit_run`);
        this method takes over when a record raised.

        Returns ``(j, None)``, ``records[i:j]`` handled and ``j == end`` or a commit due (the
        caller commits: sdk.aio off the event loop), or ``(j, error)``: the caller recovers
        (exactly_once), nothing of this transaction is kept.
        """
        handler = self._handler
        assert handler is not None
        txn, stats, commits = self._txn, self.stats, self._commits
        eos = self.guarantee is _EOS
        limit = self.profile.max_records_per_transaction
        lead = len(computed)
        if eos and not txn.open:
            try:
                txn.begin()
            except KafkaClientError as exc:
                return i, exc
        span, start, produced, due = txn.span, i, 0, self._due
        due.set(commits.last_commit + self.profile.commit_interval_ms / 1000.0)
        emit, run, lead_run = txn.emitters()
        if self._outputs_wait is not None:  # each output retried alone: no inline loop
            run, lead_run = bound_run(emit := self._waiting(emit)), bound_emit_run(emit)
        # records[marked:i] are handled but not yet in the positions and the pending
        # count: those are brought up to date once per run of records, not per record
        marked, room = i, limit - commits.pending
        failed: KafkaClientError | None = None  # set: nothing of this run is kept
        try:
            while True:
                # handle_run's per-record steps; back when the run stops or records[i] raised
                stop = min(marked + room, end)
                if i < lead:  # handlers run ahead (sdk.aio): their outputs only
                    upto = min(stop, lead)
                    i, emitted, error = lead_run(computed, i, upto, due)
                    produced += emitted
                    if error is not None:
                        raise error  # emit, or the deadline read
                    if i < upto or i >= stop:
                        break  # due, or at the transaction's record limit
                i, emitted, record, error = run(records, i, end, stop, handler, ConsumerRecord, due)
                produced += emitted
                if error is None:
                    break
                if record is None or not isinstance(error, Exception):
                    raise error  # the view, emit or the deadline; KeyboardInterrupt and such
                # the policy may commit (on_failure="stop"): the records before count
                commits.mark(records, marked, i)
                marked, room = i, limit - commits.pending
                for out in self._retry_or_fail(handler, record, error):
                    emit(out)
                    produced += 1
                i += 1
                if i >= end or i - marked >= room or time.monotonic() >= due.at:
                    break
        except KafkaClientError as exc:
            # produce() refuses (_STATE) once a delivery failed in this transaction; the
            # seam classified that as abortable
            if not eos:
                raise
            failed = exc
        finally:
            # also on the way out through an exception: a revoke then commits what was
            # handled (at_least_once), as when positions were kept per record
            if failed is None:
                commits.mark(records, marked, i)
            stats.records_in += i - start
            stats.records_out += produced
            if span is not None:
                span.add_input(i - start)
        return i, failed

    def _retry_or_fail(
        self, handler: Handler, record: ConsumerRecord, first: Exception
    ) -> list[Output]:
        """The failure policy after a first attempt failed: retries, then DLQ or stop."""
        try:
            return self._runner.retry(handler, record, first)
        except HandlerError as exc:
            return self._handler_failed(exc, [record.raw])

    def _handler_failed(self, exc: HandlerError, msgs: list[KafkaMessage]) -> list[Output]:
        """Every attempt failed: the dead-letter outputs, or stop (commit/abort, then raise).

        Raises:
            HandlerError: ``on_failure="stop"`` or no dead-letter topic.
        """
        self.stats.handler_failures += 1
        topic = self._dead_letter_topic_or_stop(exc, "handler failed")
        outputs: list[Output] = [
            dead_letter(m, topic, exc, attempts=exc.attempts, stage="handler") for m in msgs
        ]
        self.stats.dead_lettered += len(msgs)
        cause = type(exc.__cause__ or exc).__name__
        for m in msgs:
            self._tel.dead_lettered(m.topic(), topic, error_type=cause)
        return outputs

    def _dead_letter_topic_or_stop(self, exc: SdkError, what: str) -> str:
        """The failure policy gave up on a record: its dead-letter topic, or stop.

        Stopping commits what came before (at_least_once, at_most_once) or aborts the open
        transaction and rewinds (exactly_once), then raises ``exc``.

        Raises:
            SdkError: ``exc``, with ``on_failure="stop"`` or no dead-letter topic.
        """
        failure = self.profile.consumer.failure
        if failure.on_failure == "stop" or failure.dlq_topic is None:
            self.stats.note(f"{what}, stopping: {exc}")
            if self.guarantee is _EOS:
                self._commits.abort_and_rewind(cause=exc)
            else:
                self._commits.commit_or_recover()
            raise exc
        return failure.dlq_topic

    def _handle_unit(
        self, arg: A, fn: Callable[[A], Iterable[Output]], msgs: list[KafkaMessage]
    ) -> bool:
        """Handle one record (or batch); return False if the transaction was rewound."""
        if self.guarantee is _EOS:
            try:
                self._txn.begin()
            except KafkaClientError as exc:
                self._commits.recover(exc)
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
                self._commits.recover(exc)
                return False
        last_positions(msgs, self._commits.positions)
        self.stats.records_in += len(msgs)
        self._commits.pending += len(msgs)
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

    def _produce(self, out: Output) -> None:
        """Produce one output through the session (a ``send <topic>`` span when traced)."""
        self._waiting(self._txn.produce)(out)
        self.stats.records_out += 1

    def _waiting(self, emit: Callable[[Output], None]) -> Callable[[Output], None]:
        """``emit``, retrying an output whose serializer's registry does not answer.

        The output was not queued, so trying it again cannot duplicate it; the transaction
        stays open meanwhile (a wait past ``transaction.timeout.ms`` ends in the coordinator's
        abort, which the recovery rewinds). Without serializers ``emit`` itself: the hot path
        stays as it is.
        """
        wait = self._outputs_wait
        if wait is None:
            return emit

        def emit_waiting(out: Output) -> None:
            try:
                emit(out)
            except SchemaRegistryUnavailableError as exc:
                where = f"an output to {out[0]!r}"
                wait.retry(lambda: emit(out), out, exc, where=where)

        return emit_waiting


def _computed(outputs: list[Output]) -> Callable[[KafkaMessage], list[Output]]:
    """The "handler" of a record whose outputs a pool thread computed already."""
    return lambda _msg: outputs
