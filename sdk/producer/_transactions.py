"""The Producer's side of its TransactionSession: the public transaction API and the hooks.

Each public transaction method is a step of the producer's
:class:`~sdk.core.session.TransactionSession`; nothing here calls confluent-kafka's
transactional API (:mod:`sdk.core.session` is the one place that does, for the Producer, the
Processor and Spark alike). The session in turn queues its records and replaces the client
through the hooks at the end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import TYPE_CHECKING, Any, Self, cast

from sdk._client import positional_produce, translating
from sdk.core.lifecycle import Lifecycle
from sdk.core.records import OutputRecord
from sdk.core.session import TransactionSession
from sdk.errors import ConfigurationError, KafkaClientError, SdkError, TransactionError
from sdk.observability import Telemetry, TransactionSpan
from sdk.producer._client_errors import ClientErrors
from sdk.producer._emitter import Emitter
from sdk.producer._records import ProducerRecord
from sdk.profiles import ProducerProfile

if TYPE_CHECKING:
    from sdk.partitioners import PartitionRouter
    from sdk.producer._producer import Producer

__all__ = ["TransactionMethods"]

_new_record = tuple.__new__


class TransactionMethods:
    """Mixin of :class:`~sdk.producer.Producer`: its transaction methods and session hooks.

    A mixin because these are the Producer's own methods; the work is held elsewhere
    (composition): each delegates to the producer's :class:`~sdk.core.session.TransactionSession`.
    What it needs from the class is declared below (set by ``Producer.__init__``).
    """

    profile: ProducerProfile
    _transactional: bool
    _session: TransactionSession | None
    _telemetry: Telemetry | None
    _client: Any
    _hot: Any
    _state: Lifecycle
    _lock: threading.Lock
    _failures: list[KafkaClientError]
    _errors: ClientErrors
    _router: PartitionRouter
    _observed: bool
    _produce: Callable[[Any, ProducerRecord, Any], None]
    _ensure_client: Callable[[], Any]
    _send_observed: Callable[[Any, ProducerRecord], Any]
    _on_batch_delivery: Callable[[Any, Any], None]
    _fast: bool
    _known_topics: set[str]

    def session(self) -> TransactionSession:
        """The session that drives this producer's transactions, made on first use.

        The public transaction methods below delegate to it (:mod:`sdk.core.session`).

        Raises:
            ConfigurationError: The profile is not exactly_once.
        """
        if not self._transactional:
            raise ConfigurationError(
                "transactions need an exactly_once profile (this one is "
                f"{self.profile.guarantee.value})",
                field="guarantee",
            )
        if self._session is None:
            # registers itself as self._session
            TransactionSession(cast("Producer", self), telemetry=self._telemetry)
        assert self._session is not None
        return self._session

    def init_transactions(self, timeout: float = 60.0) -> None:
        """Register the transactional id with the coordinator (fences older instances).

        Called automatically by the first :meth:`begin_transaction`.

        Args:
            timeout: Seconds to wait.

        Raises:
            ConfigurationError: The profile is not exactly_once.
            TransactionError: The coordinator refused (subclass says why).
        """
        self.session().start(timeout)

    def begin_transaction(self) -> None:
        """Start a transaction (initializing transactions first if needed).

        Raises:
            TransactionError: librdkafka refused (e.g. one is already open).
        """
        session = self.session()
        if session.open:
            raise TransactionError("begin_transaction: a transaction is already open")
        session.begin()

    def send_offsets_to_transaction(
        self, offsets: Sequence[Any], group_metadata: Any, timeout: float = 30.0
    ) -> None:
        """Commit consumer offsets as part of the open transaction (KIP-447 fencing).

        Args:
            offsets: ``TopicPartition`` objects holding the *next* offset to read.
            group_metadata: ``consumer.consumer_group_metadata()`` of the consuming member.
            timeout: Seconds to wait.

        Raises:
            TransactionAbortableError: Abort and rewind (e.g. the member was fenced).
            TransactionError: Other refusals.
        """
        self.session().send_offsets(offsets, group_metadata, timeout)

    def commit_transaction(self, timeout: float = 60.0) -> None:
        """Flush and commit the open transaction.

        Raises:
            TransactionAbortableError: The transaction must be aborted.
            AmbiguousTransactionError: The outcome is unknown: close and recreate the producer
                (a new ``init_transactions`` resolves it; see docs/processor.md).
            ProducerFencedError: Another instance owns the transactional id.
        """
        session = self.session()
        try:
            session.commit_only(timeout)
        except SdkError as exc:
            session._end_span("unknown", exc)
            raise

    def abort_transaction(self, timeout: float = 60.0) -> None:
        """Abort the open transaction; its records are never visible to read_committed readers.

        Raises:
            TransactionError: The abort failed (subclass says why).
        """
        self.session().abort(timeout=timeout)

    @contextmanager
    def transaction(self, timeout: float = 60.0) -> Iterator[Self]:
        """Run the block in one transaction: commit if it succeeds, abort if it raises.

        Example::

            with producer.transaction():
                producer.send("out", b"1")
                producer.send("out", b"2")      # both visible, or neither

        Raises:
            TransactionError: Begin, commit or abort failed (the block's own exception wins
                when both happen).
        """
        self.begin_transaction()
        try:
            yield self
        except BaseException:
            with suppress(SdkError):
                self.abort_transaction(timeout)
            raise
        self.commit_transaction(timeout)

    # ------------------------------------------------------------------ for the session
    def _enqueue_output(self, out: OutputRecord, span: TransactionSpan | None) -> None:
        """Queue a handler's :class:`OutputRecord` without a handle (failures: flush).

        Raises:
            TypeError: ``out`` is not an :class:`OutputRecord` (a handler's mistake).
        """
        if not isinstance(out, OutputRecord):
            raise TypeError(
                "a handler must return OutputRecord(topic, value, key=None, headers=None, "
                f"partition=None) objects, got {type(out).__name__}: {out!r:.200}"
            )
        value, key = out.value, out.key
        # confluent-kafka sends a str UTF-8 encoded; the Producer's serializers take bytes
        if type(value) is str:
            value = value.encode()
        if type(key) is str:
            key = key.encode()
        headers = None if out.headers is None else list(out.headers)
        record = _new_record(ProducerRecord, (out.topic, value, key, headers, out.partition, None))
        client = self._client if self._state is Lifecycle.OPEN else self._ensure_client()
        if self._observed:
            self._send_observed(client, record)
        else:
            self._produce(client, record, self._on_batch_delivery)
            if span is not None:
                span.add()
        with translating(f"send to {out.topic!r}", abortable=True):
            client.poll(0)

    def _output_emitter(self, span: TransactionSpan | None) -> Callable[[OutputRecord], None]:
        """A function that queues one handler output: the Processor's hot path.

        An output with nothing to do (bytes or str, no headers, no partition, librdkafka
        places it, topic seen before) goes straight to ``client.produce``; any other output,
        and any refusal or full queue, takes :meth:`_enqueue_output` (the general path, which
        translates the error). Every path counts the output once on ``span``: the general path
        as :meth:`_enqueue_output` does (observed: through the session's span in
        ``_send_observed``), the fast path in the emitter's own count, which ``span`` adds
        (``count_from``). No poll per output: the caller serves delivery reports with
        :meth:`_serve` once per batch. Valid until the client is replaced (ask again after a
        recovery). The function is an :class:`sdk.producer._emitter.Emitter`.

        A transactional producer's fast path asks for no delivery report: a record that fails
        makes librdkafka's transaction abortable, so commit step 3 fails and the recovery
        aborts and rewinds, as it does when the flush names the failed record. The report
        would cost as much per record as the rest of the emitter; what is lost is the failed
        record in the error (librdkafka's abortable error still names the cause).
        """
        enqueue = self._enqueue_output
        if self._observed or not self._fast:
            return lambda out: enqueue(out, span)
        client = self._client if self._state is Lifecycle.OPEN else self._ensure_client()
        callback = None if self._transactional else self._on_batch_delivery
        emit = Emitter(
            OutputRecord, positional_produce(client), self._known_topics, enqueue, span, callback
        )
        if span is not None:
            span.count_from(emit)  # its fast path counts in itself, not per output on the span
        return emit

    def _serve(self, context: str) -> None:
        """Serve delivery reports and client events (``poll(0)``) through the error seam.

        Raises:
            KafkaClientError: A fatal client error (e.g. fenced).
        """
        client = self._client
        if client is not None:
            with translating(context, abortable=self._session is not None and self._session.open):
                client.poll(0)

    def _drop_client(self) -> Any:
        """Forget the client without flushing (the session recreates it: a new epoch).

        Returns:
            The dropped client (the caller purges or abandons it), or None.
        """
        with self._lock:
            client, self._client = self._client, None
            self._hot.produce = None  # send()'s fast path must not reach the dropped client
            self._failures = []
        self._router.attach(None)  # re-attached to the next client when it is made
        self._errors.clear()
        if self._state is Lifecycle.OPEN:
            self._state = Lifecycle.NEW
        return client
