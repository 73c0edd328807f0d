"""The SDK producer: a guarantee-shaped wrapper that holds a ``confluent_kafka.Producer``.

This module has the Producer's construction, lifecycle and public API, with ``send()``'s fast
path: bytes in, librdkafka places, topic known -> straight to ``client.produce``. The rest is
held by the Producer, one object each: the general path under the fast one
(``_enqueue.RecordPath``), the client's ``error_cb`` and topic lookup
(``_client_errors.ClientErrors``), what delivery callbacks report to
(``_delivery.DeliveryLedger``), and its transactional side (``_transactions.
TransactionalOutput``: the transactional calls and a transaction's outputs, the one interface
the transactional session of :mod:`sdk.core.session` drives). ``send_many``/``send_batch``
share one loop (``_batch.enqueue_each``).
"""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from types import TracebackType
from typing import Any, Literal, Self

from sdk._client import ProducerClient, positional_produce, translating
from sdk.core.lifecycle import Lifecycle
from sdk.core.records import TransactionStats
from sdk.errors import (
    ClosedError,
    ConfigurationError,
    KafkaClientError,
    KafkaTimeoutError,
    SdkError,
    TransactionError,
)
from sdk.observability import Telemetry
from sdk.partitioners import Partitioner, PartitionRouter
from sdk.producer._batch import enqueue_each
from sdk.producer._client_errors import ClientErrors
from sdk.producer._delivery import DeliveryLedger, TimedHandle
from sdk.producer._enqueue import RecordPath
from sdk.producer._handle import HotPath, new_handle
from sdk.producer._records import DeliveryHandle, Headers, ProducerRecord, RecordMetadata
from sdk.producer._transactions import TransactionalOutput
from sdk.profiles import Guarantee, ProducerProfile
from sdk.serialization import Serializer, resolve_serializer

__all__ = ["Producer", "ProducerState"]

_new_record = tuple.__new__


ProducerState = Lifecycle
"""The Producer's lifecycle, :class:`sdk.core.lifecycle.Lifecycle`: NEW, OPEN, CLOSED."""


class Producer:
    """Produce records with the delivery guarantee of a :class:`~sdk.profiles.ProducerProfile`.

    The profile fixes acks, retries, idempotence, in-flight requests and (exactly_once) the
    transactional id; this class adds serializers, partitioner routing, delivery handles, a
    bounded wait when librdkafka's queue is full, and errors that keep the record. No network
    I/O happens before the first send (the client is created lazily).

    Example::

        with Producer(profile, value_serializer="json") as producer:
            handle = producer.send("orders", {"id": 1}, key="1")
            print(handle.result(timeout=10))   # RecordMetadata(topic=..., partition=..., ...)

    Args:
        profile: The producer profile (guarantee and settings).
        key_serializer: Name (``bytes``, ``str``, ``json``) or callable ``(obj, topic) -> bytes``.
        value_serializer: Same, for values.
        partitioner: A partitioner name or instance; defaults to ``profile.partitioner``
            (``murmur2``: Java-compatible, placed natively by librdkafka).
        transactional_id: The concrete id for an exactly_once profile that has only a prefix.
        queue_full_timeout_s: Seconds ``send()`` keeps serving callbacks while librdkafka's
            local queue is full before it gives up with :class:`KafkaTimeoutError`.
        check_topics: Look each new topic up once before its first record, so an unknown topic
            fails at ``send()`` instead of after the delivery timeout.
        metadata_timeout_s: Seconds for that lookup.
        partition_refresh_s: Seconds a Python partitioner trusts a topic's partition count;
            partitions added at runtime are used after at most this long.
        on_delivery: Called with each resolved handle (success or failure), from whichever
            thread serves callbacks (``poll``/``flush``/``result``); keep it short.
        telemetry: OpenTelemetry hooks (``send <topic>`` spans, W3C trace context in the
            headers, delivery metrics, a span per transaction). None uses
            ``Telemetry.default()``, which records nothing until the application installs an
            OpenTelemetry SDK (checked when the client is created and at every ``poll`` and
            ``flush``); False turns instrumentation off entirely.
        client_factory: Builds the underlying client from the rendered config (tests, or a
            patched client); defaults to ``confluent_kafka.Producer``.
        queue_full_timeout: Deprecated name of ``queue_full_timeout_s``.
        metadata_timeout: Deprecated name of ``metadata_timeout_s``.

    Raises:
        ConfigurationError: Unknown serializer or partitioner, or an exactly_once prefix profile
            without ``transactional_id``.
    """

    _handle_type: type[DeliveryHandle] = DeliveryHandle  # sdk.aio: a handle with a future
    # what a handle reports to (sdk.producer._records._Owner): the ledger's callbacks, bound
    # once in __init__ so that a delivery costs no extra call
    _delivered: Callable[[DeliveryHandle], None]
    _failed: Callable[[DeliveryHandle, Any], KafkaClientError]

    def __init__(
        self,
        profile: ProducerProfile,
        *,
        key_serializer: str | Serializer = "bytes",
        value_serializer: str | Serializer = "bytes",
        partitioner: str | Partitioner | None = None,
        transactional_id: str | None = None,
        queue_full_timeout_s: float = 30.0,
        check_topics: bool = True,
        metadata_timeout_s: float = 10.0,
        partition_refresh_s: float = 30.0,
        on_delivery: Callable[[DeliveryHandle], None] | None = None,
        telemetry: Telemetry | Literal[False] | None = None,
        client_factory: Callable[[dict[str, Any]], Any] | None = None,
        queue_full_timeout: float | None = None,
        metadata_timeout: float | None = None,
    ) -> None:
        if queue_full_timeout is not None or metadata_timeout is not None:
            warnings.warn(  # the names before every timeout in seconds ended in _s
                "Producer(queue_full_timeout=, metadata_timeout=) are now queue_full_timeout_s= "
                "and metadata_timeout_s=",
                DeprecationWarning,
                stacklevel=2,
            )
            queue_full_timeout_s = queue_full_timeout or queue_full_timeout_s
            metadata_timeout_s = metadata_timeout or metadata_timeout_s
        if queue_full_timeout_s <= 0 or metadata_timeout_s <= 0:
            raise ConfigurationError(
                "queue_full_timeout_s and metadata_timeout_s must be > 0",
                field="queue_full_timeout_s",
            )
        self.profile = profile
        key_ser = resolve_serializer(key_serializer)
        value_ser = resolve_serializer(value_serializer)
        self._telemetry: Telemetry | None = (
            None if telemetry is False else (telemetry or Telemetry.default())
        )
        base = profile.render(transactional_id)  # refuses a prefix-only exactly_once profile
        self._router = PartitionRouter(
            partitioner or profile.partitioner,
            base,
            metadata_max_age=partition_refresh_s,
            metadata_timeout=metadata_timeout_s,
        )
        self._config: dict[str, Any] = {**base, **self._router.producer_config()}
        self._native = self._router.native
        self._transactional = profile.guarantee is Guarantee.EXACTLY_ONCE
        self._factory = client_factory
        self._client: ProducerClient | None = None
        self._state = ProducerState.NEW
        self._lock = threading.Lock()
        """Guards the client's creation and the failures list (callbacks run on any thread)."""
        self._known_topics: set[str] = set()
        """Topics whose lookup succeeded: only these take the fast path (no lookup needed)."""
        self._errors = ClientErrors(transactional=self._transactional)
        self._hot = HotPath(self._known_topics, on_delivery)  # on_delivery: called per record
        self._observed = False
        """Whether an OpenTelemetry SDK records (re-checked at creation, poll and flush)."""
        self._ledger = DeliveryLedger(
            self._hot,
            router=self._router,
            telemetry=self._telemetry,
            transactional=self._transactional,
            lock=self._lock,
        )
        self._delivered = self._ledger.on_delivered
        self._failed = self._ledger.on_failed
        path = RecordPath(
            key_ser,
            value_ser,
            router=self._router,
            errors=self._errors,
            known_topics=self._known_topics,
            check_topics=check_topics,
            metadata_timeout_s=metadata_timeout_s,
            queue_full_timeout_s=queue_full_timeout_s,
            transactional=self._transactional,
            in_transaction=lambda: self._output.open,
        )
        self._path = path
        # the bound method itself, not a delegating method: no extra call per record
        self._produce = path.produce
        """The general path of a record (:meth:`RecordPath.produce`) under the fast path."""
        self._fast = path.raw and self._native
        """Bytes in and librdkafka places: a record to a known topic goes straight to it."""
        self._output = TransactionalOutput(self)
        """The transactional calls and a transaction's outputs (one per producer)."""

    # ------------------------------------------------------------------ lifecycle
    @property
    def state(self) -> ProducerState:
        """Where the producer is in its lifecycle."""
        return self._state

    @property
    def config(self) -> dict[str, Any]:
        """The librdkafka configuration the client is (or will be) created with."""
        return dict(self._config)

    @property
    def transactional(self) -> bool:
        """Whether the profile is exactly_once (records are sent only inside transactions)."""
        return self._transactional

    @property
    def delivered(self) -> int:
        """Records acknowledged so far."""
        delivered: int = self._hot.delivered
        return delivered

    @property
    def failed(self) -> int:
        """Records that failed delivery so far."""
        return self._ledger.failed

    def __enter__(self) -> Producer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc is None:
            self.close()
            return
        with suppress(SdkError):  # an error is propagating: deliver what we can, don't mask it
            self.close()

    def _check_telemetry(self) -> None:
        """Re-check telemetry, and with it whether ``send()``'s fast path may be taken.

        One field (``_hot.produce``: the client's ``produce``, or None) answers "open, bytes
        in, librdkafka places, plain handles, nothing observed" for each record instead of four
        tests.
        """
        # an SDK installed after the Producer was made starts recording at the next check
        tel = self._telemetry
        self._observed = tel is not None and (tel.tracing_enabled() or tel.metrics_enabled())
        client = self._client
        hot = (
            self._state is ProducerState.OPEN
            and self._fast
            and not self._observed
            and self._handle_type is DeliveryHandle
        )
        self._hot.produce = positional_produce(client) if hot and client is not None else None

    def _ensure_client(self) -> ProducerClient:
        client = self._client
        if client is not None and self._state is ProducerState.OPEN:
            return client
        if self._state is ProducerState.CLOSED:
            raise ClosedError("this Producer is closed; create a new one")
        with self._lock:
            client = self._client
            if client is None:
                client = self._client = self._errors.create_client(self._factory, self._config)
                self._router.attach(client)
                self._state = ProducerState.OPEN
                self._check_telemetry()
        return client

    def _drop_client(self) -> ProducerClient | None:
        """Forget the client without flushing (its transactional side makes a new epoch).

        Returns:
            The dropped client (the caller purges or abandons it), or None.
        """
        with self._lock:
            client, self._client = self._client, None
            self._hot.produce = None  # send()'s fast path must not reach the dropped client
            self._ledger.failures = []
        self._router.attach(None)  # re-attached to the next client when it is made
        self._errors.clear()
        if self._state is ProducerState.OPEN:
            self._state = ProducerState.NEW
        return client

    def close(self, timeout: float | None = 30.0) -> None:
        """Deliver what is queued, then release the client. Idempotent.

        Args:
            timeout: Seconds to wait for outstanding deliveries.

        Raises:
            KafkaTimeoutError: Records were still undelivered after ``timeout``.
            DeliveryError: Records failed since the last ``flush()`` (``.failures``).
        """
        if self._state is ProducerState.CLOSED:
            return
        try:
            if self._client is not None:
                self.flush(timeout)
        finally:
            self._state = ProducerState.CLOSED
            self._hot.produce = None
            self._client = None
            self._router.attach(None)  # the router held the client too: free it now

    # ------------------------------------------------------------------ sending
    def send(
        self,
        topic: str | ProducerRecord,
        value: Any = None,
        *,
        key: Any = None,
        headers: Headers | Mapping[str, bytes | str | None] | None = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> DeliveryHandle:
        """Queue one record; return a handle that resolves on acknowledgement or failure.

        Args:
            topic: The topic, or a complete :class:`ProducerRecord` (then the rest is ignored).
            value: The value (serialized with ``value_serializer``).
            key: The key (serialized with ``key_serializer``; placement uses the serialized key).
            headers: A sequence of ``(name, value)`` pairs or a mapping.
            partition: An explicit partition (wins over the partitioner).
            timestamp_ms: The record timestamp (ms since the epoch); default: now.

        Returns:
            The :class:`DeliveryHandle`; failures are also collected for the next ``flush()``.

        Raises:
            SerializationError: A serializer failed or did not return bytes.
            UnknownTopicError: The topic does not exist (``check_topics``).
            RecordTooLargeError: The record is over ``message.max.bytes``.
            KafkaTimeoutError: The local queue stayed full for ``queue_full_timeout_s``.
            ClosedError: The producer is closed.
            KafkaClientError: Any other refusal by librdkafka (the record is on ``.record``).
        """
        hot = self._hot
        produce = hot.produce
        if (
            produce is not None  # open, bytes in, librdkafka places, plain handles, no telemetry
            and headers is None
            and timestamp_ms is None
            and partition is None  # a handle keeps topic, value, key: its record has no partition
            and type(topic) is str
            and (type(value) is bytes or value is None)
            and (key is None or type(key) is bytes)
            and topic in hot.known
        ):
            # straight to librdkafka (_enqueue_each inlines the same test without the
            # partition check: keep the two in step), with a handle made without __init__,
            # its record built only if asked for
            handle = new_handle(DeliveryHandle, self, topic, value, key)
            try:
                produce(topic, value, key, -1, handle)  # -1: the partitioner (positional_produce)
                return handle
            except Exception:  # full queue, refusal: the general path retries / translates
                return self._send_general(topic, value, key, None, None, None, handle)
        return self._send_general(topic, value, key, headers, partition, timestamp_ms, None)

    def _send_general(
        self,
        topic: str | ProducerRecord,
        value: Any,
        key: Any,
        headers: Headers | Mapping[str, bytes | str | None] | None,
        partition: int | None,
        timestamp_ms: int | None,
        handle: DeliveryHandle | None,
    ) -> DeliveryHandle:
        """``send()`` for every record its fast path does not take (or could not queue)."""
        if type(topic) is str:
            if headers is not None and isinstance(headers, Mapping):
                headers = list(headers.items())
            # tuple.__new__ skips the named tuple's Python-level __new__ and its frame
            record = _new_record(
                ProducerRecord, (topic, value, key, headers, partition, timestamp_ms)
            )
        elif isinstance(topic, ProducerRecord):
            record = topic
        else:
            raise ConfigurationError(
                f"send: topic must be a str or a ProducerRecord, got {type(topic).__name__}",
                field="topic",
            )
        client = self._client
        if client is None or self._state is not ProducerState.OPEN:
            client = self._ensure_client()
        if self._observed:
            return self._send_observed(client, record)
        if handle is None:  # a record send()'s fast path did not take (or asyncio's handle)
            handle = self._handle_type(record, self)
        else:  # send()'s fast path made it, and librdkafka refused it there
            handle._record = record
        # RecordPath.produce's common case is the same straight call to librdkafka
        self._produce(client, record, handle)
        return handle

    def send_and_wait(
        self,
        topic: str | ProducerRecord,
        value: Any = None,
        *,
        key: Any = None,
        headers: Headers | Mapping[str, bytes | str | None] | None = None,
        partition: int | None = None,
        timeout: float | None = None,
    ) -> RecordMetadata:
        """Send one record and wait for its acknowledgement.

        Args:
            topic: The topic, or a complete :class:`ProducerRecord`.
            value: The value.
            key: The key.
            headers: Record headers.
            partition: An explicit partition.
            timeout: Seconds to wait (None: until the delivery timeout decides).

        Returns:
            Where the record landed.

        Raises:
            KafkaClientError: The record failed (``.record`` holds it); see :meth:`send`.
        """
        handle = self.send(topic, value, key=key, headers=headers, partition=partition)
        try:
            return handle.result(timeout)
        finally:
            if handle.exception() is not None:
                # reported here; don't report it a second time at flush()
                self._ledger.discard_failure(handle.exception())

    def check_topic(self, record: ProducerRecord) -> None:
        """Check the record's topic exists (one metadata request) before a send needs it.

        ``send()`` does this on the first record to each topic (``check_topics``); calling it
        first moves that request elsewhere (the asyncio producer runs it off the event loop).

        Raises:
            UnknownTopicError: The topic does not exist.
            KafkaClientError: The lookup failed otherwise.
        """
        if record.topic not in self._known_topics:
            client = self._client if self._state is ProducerState.OPEN else self._ensure_client()
            self._path.check_topic(client, record)

    def poll(self, timeout: float = 0.0) -> int:
        """Serve delivery callbacks.

        Args:
            timeout: Seconds to wait for at least one event.

        Returns:
            The number of events served.
        """
        self._check_telemetry()
        client = self._ensure_client()
        with translating("poll"):  # a fatal error raises from poll() (sdk._client)
            served = int(client.poll(timeout))
        self._errors.raise_fatal()
        return served

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every queued record is acknowledged or failed.

        Args:
            timeout: Seconds to wait; None waits as long as the delivery timeout allows.

        Raises:
            KafkaTimeoutError: Records were still queued after ``timeout`` (nothing is lost:
                they stay queued and their handles are still pending).
            DeliveryError: Records failed since the last ``flush()``; ``.failures`` lists each
                error with its record. The list is reset once reported.
        """
        client = self._ensure_client()
        self._check_telemetry()
        with translating("flush"):
            remaining = int(client.flush(-1 if timeout is None else timeout))
        if self._errors.fatal is not None and not self._ledger.failures:
            raise self._errors.fatal  # a delivery failure, if any, tells more than the fatal
        if not self._native:
            for topic in list(self._known_topics):
                self._router.on_batch_sent(topic)
        if remaining:
            raise KafkaTimeoutError(
                f"flush: {remaining} record(s) still queued after {timeout}s; they stay queued "
                "and may yet be delivered"
            )
        self._ledger.raise_failures()

    def send_many(self, records: Iterable[ProducerRecord]) -> list[DeliveryHandle]:
        """Queue many records with the least per-record overhead (the throughput path).

        Delivery callbacks are served every 1,000 records, so the queue drains while this runs.

        Args:
            records: The records, in order.

        Returns:
            One handle per record, in order.

        Raises:
            SdkError: As :meth:`send`, for the first record that cannot be queued; the records
                before it are queued (their handles are on ``.handles`` of the error).
        """
        handles: list[DeliveryHandle] = []
        enqueue_each(self, records, handles)
        return handles

    def send_batch(self, records: Iterable[ProducerRecord]) -> int:
        """Queue many records without per-record handles: the fastest path.

        One shared delivery callback counts acknowledgements; a failed record is rebuilt from
        the delivery report (topic, serialized key and value, headers, partition) and reported
        by the next :meth:`flush` in ``DeliveryError.failures`` — so nothing is lost silently,
        but a failed record comes back in its serialized (bytes) form. With an OpenTelemetry
        SDK recording, records take the traced path of :meth:`send`.

        Args:
            records: The records, in order.

        Returns:
            The number of records queued.

        Raises:
            SdkError: As :meth:`send`, for the first record that cannot be queued; the records
                before it are queued (``.queued`` on the error says how many).
        """
        return enqueue_each(self, records, None)

    def _send_observed(self, client: ProducerClient, record: ProducerRecord) -> DeliveryHandle:
        """``send`` with a ``send <topic>`` span, trace headers and delivery metrics."""
        tel = self._telemetry
        assert tel is not None
        handle = TimedHandle(record, self)
        with tel.send_span(record.topic, record.partition, record.key):
            traced = record._replace(headers=tel.inject(record.headers))
            handle._t0 = time.perf_counter()
            try:
                self._produce(client, traced, handle)
            except SdkError as exc:
                exc.record = record  # type: ignore[attr-defined]  # the caller's own record
                raise
        span = self._output.span
        if span is not None:
            span.add()
        return handle

    def _poll(self, timeout: float) -> Any:
        """Serve callbacks (``DeliveryHandle.result`` waits with it); translated errors."""
        client = self._client
        if client is None:
            return 0
        with translating("poll"):
            return client.poll(timeout)

    # ------------------------------------------------------------------ transactions
    def transactional_output(
        self, *, stats: TransactionStats, telemetry: Telemetry | None
    ) -> TransactionalOutput:
        """This producer's transactional side, reporting to ``stats`` and ``telemetry``.

        The one interface the transactional session (:mod:`sdk.core.session`) drives the
        producer by: the transactional calls, a transaction's outputs and the state of the open
        transaction. The transaction methods below are its steps, one call each.

        Args:
            stats: Where retries and stalled calls are counted.
            telemetry: The span per transaction, retry and safeguard metrics (None: none).

        Returns:
            The producer's :class:`~sdk.producer._transactions.TransactionalOutput`.
        """
        output = self._output
        output.stats, output.telemetry = stats, telemetry
        return output

    def _transactions(self) -> TransactionalOutput:
        if not self._transactional:
            raise ConfigurationError(
                "transactions need an exactly_once profile (this one is "
                f"{self.profile.guarantee.value})",
                field="guarantee",
            )
        return self._output

    def init_transactions(self, timeout: float = 60.0) -> None:
        """Register the transactional id with the coordinator (fences older instances).

        Called automatically by the first :meth:`begin_transaction`.

        Args:
            timeout: Seconds to wait.

        Raises:
            ConfigurationError: The profile is not exactly_once.
            TransactionError: The coordinator refused (subclass says why).
        """
        self._transactions().start(timeout)

    def begin_transaction(self) -> None:
        """Start a transaction (initializing transactions first if needed).

        Raises:
            TransactionError: librdkafka refused (e.g. one is already open).
        """
        output = self._transactions()
        if output.open:
            raise TransactionError("begin_transaction: a transaction is already open")
        output.begin()

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
        self._transactions().send_offsets(offsets, group_metadata, timeout)

    def commit_transaction(self, timeout: float = 60.0) -> None:
        """Flush and commit the open transaction.

        Raises:
            TransactionAbortableError: The transaction must be aborted.
            AmbiguousTransactionError: The outcome is unknown: close and recreate the producer
                (a new ``init_transactions`` resolves it; see docs/processor.md).
            ProducerFencedError: Another instance owns the transactional id.
        """
        output = self._transactions()
        try:
            output.commit(timeout)
        except SdkError as exc:
            output.end_span("unknown", exc)
            raise

    def abort_transaction(self, timeout: float = 60.0) -> None:
        """Abort the open transaction; its records are never visible to read_committed readers.

        Raises:
            TransactionError: The abort failed (subclass says why).
        """
        self._transactions().abort(timeout=timeout)

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
