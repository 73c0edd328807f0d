"""The Producer's transactional side: the one interface :mod:`sdk.core.session` drives it by.

:class:`TransactionalOutput` is the only code that calls confluent-kafka's transactional API
(``init_transactions``, ``begin_transaction``, ``send_offsets_to_transaction``,
``commit_transaction``, ``abort_transaction``): each call is retried while its error is
transient and translated at the seam (:func:`sdk._client.call_kafka`). It also queues a
transaction's outputs through the Producer's record path and keeps the state of the open
transaction (open, since when, its span, whether a call is stuck in the client).

Two callers use it, one layer apart: the Producer's public transaction methods are its steps,
one call each; the transactional session (:class:`sdk.core.session.TransactionSession`, the
layer above) holds a Producer and runs the same steps in its numbered commit sequence and its
recovery. What to do after a failed call is decided there, never here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, TypeVar

from confluent_kafka import TopicPartition

from sdk._client import (
    GroupMetadata,
    ProducerClient,
    call_kafka,
    positional_produce,
    timeout_error,
    translating,
)
from sdk._config import config_int
from sdk.errors import (
    ConfigurationError,
    DeliveryError,
    KafkaClientError,
    SdkError,
    TransactionAbortableError,
    from_kafka_error,
    is_transient,
)
from sdk.lifecycle import Lifecycle
from sdk.observability import Telemetry, TransactionOutcome, TransactionSpan
from sdk.producer._bounded import ABANDONED, STALL_GRACE_S, CallStuckError, bounded
from sdk.producer._emitter import Emitter
from sdk.producer._records import ProducerRecord
from sdk.records import (
    EmitRun,
    HandleRun,
    Output,
    OutputRecord,
    TransactionStats,
    bound_emit_run,
    bound_run,
)

if TYPE_CHECKING:
    from sdk.producer._producer import Producer

__all__ = ["TransactionalOutput", "transaction_block"]

T = TypeVar("T")
P = TypeVar("P", bound="Producer")

_new_record = tuple.__new__


def _never() -> bool:
    return False


class TransactionalOutput:
    """One Producer's transactional calls, its transaction's outputs and the open transaction.

    Made by the Producer (one each) and reached through
    :meth:`~sdk.producer.Producer.transactional_output`. It works for every guarantee: without
    exactly_once there is no transactional call to make, and :meth:`produce`, :meth:`emitter`,
    :meth:`serve` and :meth:`flush` are the at-least-once output path of the Processor.

    Args:
        producer: The Producer it belongs to; it uses the Producer's client slot
            (:class:`~sdk.producer._client_slot.ClientSlot`), its send paths and delivery
            ledger.

    Attributes:
        stats: Where retries and stalled calls are counted (the session's counters once a
            session drives this producer).
        telemetry: The span per transaction, retry and safeguard metrics (None: none).
        open: A transaction is open.
        opened_at: ``time.monotonic()`` when it began.
        span: The open transaction's span, if traced.
        initialized: ``init_transactions()`` succeeded on the current client.
        stuck: A call ignored its timeout and may still be blocked in the client.
        timeout_s: Timeout of each transactional call (``transaction_call_timeout_ms``).
        flush_timeout_s: How long commit step 2 (flush) waits.
    """

    def __init__(self, producer: Producer) -> None:
        self._producer = producer
        self._slot = producer._slot
        self.stats = TransactionStats()
        self.telemetry: Telemetry | None = producer._telemetry
        profile = producer.profile
        config = producer.config
        self.transactional = producer.transactional
        self.transactional_id = str(config.get("transactional.id", ""))
        self.transaction_timeout_ms = profile.transaction_timeout_ms
        self.timeout_s = profile.transaction_call_timeout_ms / 1000.0
        # step 2 (flush) waits as long as a record may live: librdkafka resolves every queued
        # record (delivered or failed) within message.timeout.ms, capped at the transaction timeout
        life_ms = config_int(config, "message.timeout.ms", 0)
        self.flush_timeout_s = life_ms / 1000.0 or self.timeout_s
        self._max_queued = config_int(config, "queue.buffering.max.messages", 100_000)
        self.open = False
        self.opened_at = 0.0
        self.span: TransactionSpan | None = None
        self.initialized = False
        self.stuck = False

    # ------------------------------------------------------------------ calls
    def _call(self, fn: Callable[[], T], context: str, *, attempts: int = 5) -> T:
        def retried(name: str) -> None:
            self.stats.retries += 1
            if self.telemetry is not None:
                self.telemetry.retry(name)

        return call_kafka(
            fn,
            context=context,
            transactional=self.transactional,
            attempts=attempts,
            on_retry=retried,
        )

    def client(self) -> ProducerClient:
        """The producer's client, created on first use.

        Raises:
            ClosedError: The Producer is closed.
            ConfigurationError: librdkafka refused the configuration.
        """
        return self._slot.ensure()

    def checked(self) -> TransactionalOutput:
        """This output, for a public transaction method of the Producer.

        Raises:
            ConfigurationError: The profile is not exactly_once.
        """
        if not self.transactional:
            raise ConfigurationError(
                "transactions need an exactly_once profile (this one is "
                f"{self._producer.profile.guarantee.value})",
                field="guarantee",
            )
        return self

    def start(
        self, timeout: float | None = None, stopped: Callable[[], bool] | None = None
    ) -> bool:
        """Create the client, wait for a broker, run ``init_transactions()`` (fences older epochs).

        Until the Producer has reached a broker, a metadata request is made first, every
        second or so: an address where nothing answers fails after
        ``socket.connection.setup.timeout.ms`` with the address named (instead of an
        ``init_transactions`` timeout that points at transactions), and a stop request is seen
        meanwhile.

        Args:
            timeout: Seconds for ``init_transactions`` (default: the call timeout).
            stopped: A stop request ends the wait for a broker (then False is returned).

        Returns:
            False if ``stopped()`` became true before a broker answered (nothing was started).

        Raises:
            BrokerUnreachableError: No broker of ``bootstrap.servers`` answered in time.
            KafkaClientError: init_transactions failed after retries.
        """
        client = self.client()
        contact = self._slot.errors.contact
        if contact is not None and not contact.reached:
            context = "init_transactions" if self.transactional else "producer start"
            if not contact.wait(
                lambda t: client.list_topics(timeout=t),
                stopped or _never,
                context,
                serve=lambda: self._slot.serve(0),
            ):
                return False
        if self.transactional:
            t = self.timeout_s if timeout is None else timeout
            try:  # one call first: a coordinator that never comes is diagnosed, not retried
                first = min(t, self.timeout_s)
                self._call(lambda: client.init_transactions(first), "init_transactions", attempts=1)
            except KafkaClientError as exc:
                if not is_transient(exc.kafka_error):
                    raise
                from sdk.doctor import refuse_transactions  # lazy: an admin client only now

                refuse_transactions(self._producer.profile, exc)  # the doctor names the cause
                self._call(lambda: client.init_transactions(t), "init_transactions")
            self.initialized = True
        self.open = False
        return True

    def begin(self) -> None:
        """Begin a transaction unless one is open (initializing transactions first if needed).

        Raises:
            KafkaClientError: begin_transaction failed.
        """
        if self.open:
            return
        if not self.initialized:
            self.start()
        client = self.client()
        self._call(client.begin_transaction, "begin_transaction")
        self.open = True
        self.opened_at = time.monotonic()
        if self.telemetry is not None:
            self.span = self.telemetry.start_transaction(self.transactional_id)

    def send_offsets(
        self, offsets: Sequence[TopicPartition], group_metadata: GroupMetadata, timeout: float
    ) -> None:
        """Commit step 1: the input positions join the open transaction, bounded.

        Bounded because librdkafka can ignore the call's timeout (see :func:`bounded`).

        Raises:
            AmbiguousTransactionError: The call did not return within its bound; the client
                is abandoned (never destroyed) and a new epoch fences it.
            KafkaClientError: The call failed (TransactionAbortableError for a stale member).
        """
        client = self.client()
        context = "commit step 1 (send_offsets_to_transaction)"
        limit = timeout + max(STALL_GRACE_S, timeout)
        try:
            self._call(
                lambda: bounded(
                    lambda: client.send_offsets_to_transaction(
                        list(offsets), group_metadata, timeout
                    ),
                    limit,
                    name="send_offsets_to_transaction",
                ),
                context,
            )
        except CallStuckError as exc:
            self.stuck = True
            self.stats.stalled_calls += 1
            if self.telemetry is not None:
                self.telemetry.safeguard("stalled_call", f"{context}: {exc}; producer abandoned")
            raise from_kafka_error(
                timeout_error(
                    f"no answer {limit:g}s after a call with a {timeout:g}s timeout "
                    "(librdkafka #5456/#5511); the producer is abandoned and a new epoch "
                    "fences it"
                ),
                context=context,
                transactional=True,
            ) from exc

    def flush(self, context: str = "commit step 2 (flush)", timeout: float | None = None) -> None:
        """Commit step 2: wait until every queued record is acknowledged or failed.

        Args:
            context: Names the step in errors.
            timeout: Seconds to wait (default: ``flush_timeout_s``).

        Raises:
            AmbiguousTransactionError: Records left after ``message.timeout.ms``
                (KafkaTimeoutError outside a transaction).
            TransactionAbortableError: A record of the transaction failed (DeliveryError
                outside a transaction).
        """
        client = self.client()
        t = self.flush_timeout_s if timeout is None else timeout
        remaining = self._call(lambda: client.flush(t), context, attempts=1)
        if remaining:
            raise from_kafka_error(
                timeout_error(f"{remaining} records unacknowledged"),
                context=context,
                transactional=self.transactional,
            )
        failures = self._producer._ledger.take_failures()
        if not failures:
            return
        first = failures[0]
        cls = TransactionAbortableError if self.transactional else DeliveryError
        error = cls(
            f"{context}: {len(failures)} record(s) failed delivery; first: {first}",
            kafka_error=first.kafka_error,
            record=first.record,
        )
        if isinstance(error, DeliveryError):
            error.failures = failures
        raise error

    def commit(self, timeout: float | None = None) -> None:
        """Commit step 3: ``commit_transaction()`` (librdkafka flushes what is still queued).

        Raises:
            KafkaClientError: The commit failed (its subclass tells the recovery path).
        """
        client = self.client()
        t = self.timeout_s if timeout is None else timeout
        self._call(lambda: client.commit_transaction(t), "commit step 3 (commit_transaction)")
        self.open = False
        self.end_span("committed")

    def abort(
        self, cause: BaseException | None = None, timeout: float | None = None, attempts: int = 5
    ) -> None:
        """Abort the open transaction (purges unsent records; failed deliveries forgotten).

        Args:
            cause: The error that made the abort necessary (recorded on the span).
            timeout: Seconds for the call (default: the call timeout).
            attempts: Attempts while the error is transient (1: no retry, e.g. on the way out).

        Raises:
            KafkaClientError: abort failed (AmbiguousTransactionError on a timeout).
        """
        client = self.client()
        t = self.timeout_s if timeout is None else timeout
        self._call(lambda: client.abort_transaction(t), "abort_transaction", attempts=attempts)
        self._producer._ledger.take_failures()  # the abort reports them; they are not delivered
        self.open = False
        self.end_span("aborted", cause)

    def close(
        self, outcome: TransactionOutcome = "aborted", cause: BaseException | None = None
    ) -> None:
        """Drop the client without waiting (an open transaction is aborted by the next epoch).

        The Producer creates a new client on next use: with the same ``transactional.id``, its
        ``init_transactions()`` bumps the epoch and fences whatever the old one has in flight.

        Args:
            outcome: Outcome recorded for a transaction still open (its span is ended).
            cause: The error that led here, if any.
        """
        self.end_span(outcome, cause)
        ledger = self._producer._ledger
        client = self._slot.drop()
        if client is not None and self.stuck:
            ABANDONED.append(client)  # a call is still blocked in it: never destroy
        elif client is not None:
            # a fenced or broken client has nothing to give back
            with suppress(KafkaClientError), translating("close"):
                client.purge()
                client.flush(0)
            # flush(0) served the purged records' _PURGE_QUEUE reports into the failures: they
            # belong to the dropped transaction, not to the next one
            ledger.take_failures()
        self.stuck = False
        self.open = False
        self.initialized = False

    def end_span(self, outcome: TransactionOutcome, cause: BaseException | None = None) -> None:
        """End the open transaction's span, if any, with ``outcome``."""
        span, self.span = self.span, None
        if span is not None:
            span.end(outcome, error=cause)

    # ------------------------------------------------------------------ outputs
    def produce(self, out: Output) -> None:
        """Queue a handler's output without a handle (failures: flush).

        ``out`` is an :class:`OutputRecord` or a plain tuple of its first fields (``(topic,
        value)``, ``(topic, value, key)``, up to all five).

        It goes through the Producer's record path (serializers, partitioner, bounded wait on a
        full queue) and counts on the transaction's span.

        Raises:
            TypeError: ``out`` is neither an :class:`OutputRecord` nor a tuple of 2 to 5 of
                its fields (a handler's mistake).
            KafkaClientError: The producer refused it (TransactionAbortableError inside a
                transaction unless fenced or fatal); the record is on ``.record``.
        """
        self._enqueue(out, self.span)

    def _enqueue(self, out: Output, span: TransactionSpan | None) -> None:
        """:meth:`produce`, counting on ``span``: the general path of the emitter too."""
        if not isinstance(out, OutputRecord):
            if type(out) is not tuple or not 2 <= len(out) <= 5 or type(out[0]) is not str:
                raise TypeError(
                    "a handler must return OutputRecord(topic, value, key=None, headers=None, "
                    "partition=None) objects or plain tuples (topic, value[, key]), got "
                    f"{type(out).__name__}: {out!r:.200}"
                )
            out = OutputRecord(*out)
        value, key = out.value, out.key
        # confluent-kafka sends a str UTF-8 encoded; the bytes serializer takes bytes (any
        # other serializer gets the handler's object as it is)
        path = self._producer._path
        if type(value) is str and path.raw_value:
            value = value.encode()
        if type(key) is str and path.raw_key:
            key = key.encode()
        headers = None if out.headers is None else list(out.headers)
        record = _new_record(ProducerRecord, (out.topic, value, key, headers, out.partition, None))
        producer, slot = self._producer, self._slot
        client = slot.client
        if client is None or slot.state is not Lifecycle.OPEN:
            client = slot.ensure()
        if slot.observed:
            producer._send_observed(client, record)  # counts on the open span itself
        else:
            producer._produce(client, record, producer._ledger.on_batch_delivery)
            if span is not None:
                span.add()
        with translating(f"send to {out.topic!r}", abortable=True):
            client.poll(0)

    def emitter(self) -> Callable[[Output], None]:
        """A function that queues one handler output: the first of :meth:`emitters`."""
        return self.emitters()[0]

    def emitters(self) -> tuple[Callable[[Output], None], HandleRun, EmitRun]:
        """A function that queues one handler output, and the two loops built on it.

        The function is the Processor's hot path; the loops are :func:`sdk.records.handle_run`
        and :func:`sdk.records.emit_run` with that function (on the fast path its commonest
        case inline: :attr:`sdk.producer._emitter.Emitter.run` and ``emit_run``).

        An output with nothing to do (bytes or str, no headers, no partition, librdkafka places
        it, topic seen before) goes straight to ``client.produce``; any other output, and any
        refusal or full queue, takes :meth:`produce`'s path (the general path, which translates
        the error). Every path counts the output once on the span: the general path as
        :meth:`produce` does, the fast path in the emitter's own count, which the span adds
        (``count_from``). No poll per output: the caller serves delivery reports with
        :meth:`serve` once per batch. Valid until the client or the transaction changes: ask
        again after :meth:`begin` or a recovery. The function is an
        :class:`sdk.producer._emitter.Emitter`'s ``emit``.

        A transactional producer's fast path asks for no delivery report: a record that fails
        makes librdkafka's transaction abortable, so commit step 3 fails and the recovery
        aborts and rewinds, as it does when the flush names the failed record. The report
        would cost as much per record as the rest of the emitter; what is lost is the failed
        record in the error (librdkafka's abortable error still names the cause).
        """
        enqueue, span = self._enqueue, self.span
        producer = self._producer
        if self._slot.observed or not producer._fast:
            emit = lambda out: enqueue(out, span)  # noqa: E731  # one name for two uses
            return emit, bound_run(emit), bound_emit_run(emit)
        client = self.client()
        callback = None if self.transactional else producer._ledger.on_batch_delivery
        known = producer._known_topics
        emitter = Emitter(OutputRecord, positional_produce(client), known, enqueue, span, callback)
        if span is not None:
            span.count_from(emitter)  # its fast path counts in itself, not per output on the span
        return emitter.emit, emitter.run, emitter.emit_run

    def queue_half_full(self) -> bool:
        """Whether the local queue holds half of ``queue.buffering.max.messages`` or more.

        Past that, what queues outputs may soon find it full and wait for room.
        """
        client = self._slot.client
        return client is not None and 2 * len(client) >= self._max_queued

    def serve(self, context: str = "serve delivery reports") -> None:
        """Serve delivery reports and client events (``poll(0)``) through the error seam.

        Raises:
            KafkaClientError: A fatal client error (fenced: ProducerFencedError).
        """
        client = self._slot.client
        if client is not None:
            with translating(context, abortable=self.open):
                client.poll(0)


@contextmanager
def transaction_block(producer: P, timeout_s: float) -> Iterator[P]:
    """``Producer.transaction()``: commit if the block succeeds, abort if it raises.

    Raises:
        TransactionError: Begin, commit or abort failed (the block's own exception wins when
            both happen).
    """
    producer.begin_transaction()
    try:
        yield producer
    except BaseException:
        with suppress(SdkError):
            producer.abort_transaction(timeout_s)
        raise
    producer.commit_transaction(timeout_s)
