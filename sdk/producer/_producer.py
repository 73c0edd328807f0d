"""The SDK producer: a guarantee-shaped wrapper that holds a ``confluent_kafka.Producer``."""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from types import TracebackType
from typing import Any, Literal

from confluent_kafka import KafkaError

from sdk._client import translating
from sdk.core.lifecycle import Lifecycle
from sdk.core.records import OutputRecord
from sdk.core.session import TransactionSession
from sdk.errors import (
    AuthenticationError,
    AuthorizationError,
    BrokerUnreachableError,
    ClosedError,
    ConfigurationError,
    DeliveryError,
    KafkaClientError,
    KafkaTimeoutError,
    SdkError,
    SerializationError,
    TransactionError,
    UnknownTopicError,
    from_kafka_error,
)
from sdk.observability import Telemetry, TransactionSpan
from sdk.partitioners import Partitioner, PartitionRouter
from sdk.producer._records import DeliveryHandle, Headers, ProducerRecord, RecordMetadata
from sdk.profiles import Guarantee, ProducerProfile
from sdk.serialization import Serializer, resolve_serializer

__all__ = ["Producer", "ProducerState"]

_new_record = tuple.__new__
_log = logging.getLogger("sdk.producer")

_UNKNOWN_PARTITION_CODES = frozenset(
    (KafkaError._UNKNOWN_PARTITION, KafkaError.UNKNOWN_TOPIC_OR_PART)
)


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
        self._key_ser = resolve_serializer(key_serializer)
        self._value_ser = resolve_serializer(value_serializer)
        bytes_ser = resolve_serializer("bytes")
        # bytes in, bytes out: skip the serializer call on the hot path
        self._raw_key = self._key_ser is bytes_ser
        self._raw_value = self._value_ser is bytes_ser
        self._user_callback = on_delivery
        self._telemetry: Telemetry | None = (
            None if telemetry is False else (telemetry or Telemetry.default())
        )
        self._notify = on_delivery is not None
        self._observed = False
        """Whether an OpenTelemetry SDK records (re-checked at creation, poll and flush)."""
        base = profile.render(transactional_id)  # refuses a prefix-only exactly_once profile
        self._router = PartitionRouter(
            partitioner or profile.partitioner,
            base,
            metadata_max_age=partition_refresh_s,
            metadata_timeout=metadata_timeout_s,
        )
        self._config: dict[str, Any] = {**base, **self._router.producer_config()}
        self._native = self._router.native
        self._fast = self._raw_key and self._raw_value and self._native
        self._transactional = profile.guarantee is Guarantee.EXACTLY_ONCE
        self._queue_full_timeout = queue_full_timeout_s
        self._check_topics = check_topics
        self._metadata_timeout = metadata_timeout_s
        self._factory = client_factory
        self._client: Any = None
        self._state = ProducerState.NEW
        self._lock = threading.Lock()
        self._known_topics: set[str] = set()
        self._failures: list[KafkaClientError] = []
        self._session: TransactionSession | None = None
        """The transactional session driving this producer's transactions, once made."""
        self._fatal: KafkaClientError | None = None
        self._auth_failure: AuthenticationError | None = None
        self.delivered = 0
        """Records acknowledged so far."""
        self.failed = 0
        """Records that failed delivery so far."""

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

    def _ensure_client(self) -> Any:
        if self._state is ProducerState.OPEN:
            return self._client
        if self._state is ProducerState.CLOSED:
            raise ClosedError("this Producer is closed; create a new one")
        with self._lock:
            if self._client is None:
                factory = self._factory
                if factory is None:
                    from confluent_kafka import Producer as _Client

                    factory = _Client
                try:
                    # error_cb: librdkafka's client-level errors (e.g. a fatal
                    # CLUSTER_AUTHORIZATION_FAILED for the idempotent producer id) reach the SDK
                    # instead of escaping from flush()/poll() as a raw KafkaError
                    self._client = factory(dict(self._config, error_cb=self._on_client_error))
                except Exception as exc:  # KafkaException for a bad librdkafka key/value
                    raise _config_error(exc) from exc
                self._router.attach(self._client)
                self._check_telemetry()
                self._state = ProducerState.OPEN
        return self._client

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
            self._client = None

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
        if type(topic) is str:
            if headers is not None and isinstance(headers, Mapping):
                headers = list(headers.items())
            # tuple.__new__ skips the named tuple's Python-level __new__ (500 -> 110 ns)
            record = _new_record(
                ProducerRecord, (topic, value, key, headers, partition, timestamp_ms)
            )
        elif isinstance(topic, ProducerRecord):
            record = topic
            _, value, key, headers, partition, timestamp_ms = record
        else:
            raise ConfigurationError(
                f"send: topic must be a str or a ProducerRecord, got {type(topic).__name__}",
                field="topic",
            )
        client = self._client if self._state is ProducerState.OPEN else self._ensure_client()
        if self._observed:
            return self._send_observed(client, record)
        handle = DeliveryHandle(record, self)
        if (
            self._fast
            and headers is None
            and timestamp_ms is None
            and (value is None or type(value) is bytes)
            and (key is None or type(key) is bytes)
            and record.topic in self._known_topics
        ):
            # bytes in, librdkafka places, topic known: straight to librdkafka
            try:
                if partition is None:
                    client.produce(record.topic, value, key, on_delivery=handle._deliver)
                else:
                    client.produce(record.topic, value, key, partition, on_delivery=handle._deliver)
                return handle
            except Exception:  # full queue, refusal: the general path retries / translates
                pass
        self._produce(client, record, handle._deliver)
        return handle

    def _send_observed(self, client: Any, record: ProducerRecord) -> DeliveryHandle:
        """``send`` with a ``send <topic>`` span, trace headers and delivery metrics."""
        tel = self._telemetry
        assert tel is not None
        handle = _TimedHandle(record, self)
        with tel.send_span(record.topic, record.partition, record.key):
            traced = record._replace(headers=tel.inject(record.headers))
            handle._t0 = time.perf_counter()
            try:
                self._produce(client, traced, handle._deliver)
            except SdkError as exc:
                exc.record = record  # type: ignore[attr-defined]  # the caller's own record
                raise
        span = self._session.span if self._session is not None else None
        if span is not None:
            span.add()
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
                self._discard_failure(handle.exception())

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
        client = self._ensure_client()
        poll = self._poll  # translated: a fatal error raises from poll() (sdk._client)
        produce = self._produce
        handles: list[DeliveryHandle] = []
        append = handles.append
        try:
            for i, record in enumerate(records, 1):
                if self._observed:
                    append(self._send_observed(client, record))
                else:
                    handle = DeliveryHandle(record, self)
                    produce(client, record, handle._deliver)
                    append(handle)
                if not i % 1000:
                    poll(0)
                    self._check_telemetry()
        except SdkError as exc:
            exc.handles = handles  # type: ignore[attr-defined]
            raise
        poll(0)
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
        client = self._ensure_client()
        poll, produce = self._poll, client.produce  # _poll: translated
        callback = self._on_batch_delivery
        known, fast = self._known_topics, self._fast
        queued = 0
        try:
            for record in records:
                if self._observed:
                    self._send_observed(client, record)
                else:
                    topic, value, key, headers, partition, timestamp_ms = record
                    if not (
                        fast
                        and headers is None
                        and timestamp_ms is None
                        and partition is None
                        and (value is None or type(value) is bytes)
                        and (key is None or type(key) is bytes)
                        and topic in known
                    ):
                        self._produce(client, record, callback)
                    else:
                        try:
                            produce(topic, value, key, on_delivery=callback)
                        except Exception:  # full queue, refusal: the general path handles it
                            self._produce(client, record, callback)
                queued += 1
                if not queued % 1000:
                    poll(0)
                    self._check_telemetry()
        except SdkError as exc:
            exc.queued = queued  # type: ignore[attr-defined]
            raise
        poll(0)
        return queued

    def _on_batch_delivery(self, err: Any, msg: Any) -> None:
        if err is None:
            self.delivered += 1
            return
        self.failed += 1
        record = ProducerRecord(msg.topic(), msg.value(), msg.key(), msg.headers(), msg.partition())
        error = from_kafka_error(
            err,
            context=f"delivery to {record.topic!r}",
            record=record,
            transactional=self._transactional,
        )
        if error.code in _UNKNOWN_PARTITION_CODES:
            self._router.invalidate(record.topic)
        with self._lock:
            self._failures.append(error)

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
        self._raise_fatal()
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
        if self._fatal is not None and not self._failures:
            raise self._fatal
        if not self._native:
            for topic in list(self._known_topics):
                self._router.on_batch_sent(topic)
        if remaining:
            raise KafkaTimeoutError(
                f"flush: {remaining} record(s) still queued after {timeout}s; they stay queued "
                "and may yet be delivered"
            )
        with self._lock:
            failures, self._failures = self._failures, []
        if failures:
            first = failures[0]
            raise DeliveryError(
                f"{len(failures)} record(s) failed delivery since the last flush; first: {first}",
                kafka_error=first.kafka_error,
                record=first.record,
                failures=failures,
            )

    # ------------------------------------------------------------------ internals
    def _produce(self, client: Any, record: ProducerRecord, callback: Any) -> None:
        topic, key, value = record.topic, record.key, record.value
        if not (
            self._raw_key
            and self._raw_value
            and (key is None or type(key) is bytes)
            and (value is None or type(value) is bytes)
        ):
            key, value = self._serialize(record)
        if topic not in self._known_topics and self._check_topics:
            self._check_topic(client, record)
        partition = record.partition
        if partition is None and not self._native:
            try:
                partition = self._router.route(topic, key, value)
            except SdkError as exc:
                _attach(exc, record)
                raise
        if record.headers is None and record.timestamp_ms is None:
            try:  # the common case: no kwargs dict, no retry loop
                if partition is None:
                    client.produce(topic, value, key, on_delivery=callback)
                else:
                    client.produce(topic, value, key, partition, on_delivery=callback)
                return
            except Exception:  # BufferError, KafkaException: the general path below retries
                pass  # a full queue and translates errors
        kwargs: dict[str, Any] = {"key": key, "on_delivery": callback}
        if partition is not None:
            kwargs["partition"] = partition
        if record.headers:
            kwargs["headers"] = list(record.headers)
        if record.timestamp_ms is not None:
            kwargs["timestamp"] = record.timestamp_ms
        self._produce_bounded(client, topic, value, kwargs, record)

    def _serialize(self, record: ProducerRecord) -> tuple[bytes | None, bytes | None]:
        topic = record.topic
        try:
            key = self._key_ser(record.key, topic)
            value = self._value_ser(record.value, topic)
        except SerializationError as exc:
            exc.record = record
            raise
        except Exception as exc:
            raise SerializationError(
                f"serializing a record for {topic!r} failed: {exc!r}", record=record
            ) from exc
        for part, data in (("key", key), ("value", value)):
            if data is not None and not isinstance(data, bytes):
                raise SerializationError(
                    f"the {part} serializer returned {type(data).__name__}, not bytes, for a "
                    f"record to {topic!r}",
                    record=record,
                )
        return key, value

    def _produce_bounded(
        self, client: Any, topic: str, value: bytes | None, kwargs: dict[str, Any], record: Any
    ) -> None:
        session = self._session
        in_transaction = session is not None and session.open
        deadline = 0.0
        while True:
            try:
                # inside a transaction a refusal leaves it abortable (decided at translation)
                with translating(f"send to {topic!r}", abortable=in_transaction, record=record):
                    client.produce(topic, value, **kwargs)
                return
            except BufferError:
                # librdkafka's local queue is full: serve callbacks so it drains, bounded
                now = time.monotonic()
                if not deadline:
                    deadline = now + self._queue_full_timeout
                elif now >= deadline:
                    raise KafkaTimeoutError(
                        f"send to {topic!r}: the local queue stayed full for "
                        f"{self._queue_full_timeout}s (queue.buffering.max.messages/kbytes); "
                        "the broker is slower than the producer or unreachable",
                        record=record,
                    ) from None
                with translating(f"send to {topic!r}", record=record):
                    client.poll(0.05)
            except KafkaClientError as exc:
                if exc.code in _UNKNOWN_PARTITION_CODES:
                    self._router.invalidate(topic)
                if self._transactional and not in_transaction:
                    raise TransactionError(
                        f"send to {topic!r}: an exactly_once producer sends only inside a "
                        "transaction: call begin_transaction() first, or use "
                        "`with producer.transaction():`",
                        kafka_error=exc.kafka_error,
                        record=record,
                    ) from exc
                raise

    def _check_topic(self, client: Any, record: ProducerRecord) -> None:
        topic = record.topic
        context = f"send to {topic!r}: metadata lookup"
        try:
            with translating(context, record=record):
                meta = client.list_topics(topic=topic, timeout=self._metadata_timeout)
        except KafkaClientError as err:
            if isinstance(err, (BrokerUnreachableError, KafkaTimeoutError)):
                # librdkafka reports bad credentials as a transport failure of the lookup; the
                # reason comes through error_cb: serve it, and say it
                client.poll(0)
                auth = self._auth_failure
                if auth is not None:
                    raise AuthenticationError(
                        f"{context}: {auth.args[0].split(': ', 1)[-1]}",
                        kafka_error=auth.kafka_error,
                        record=record,
                    ) from err
            raise
        info = meta.topics.get(topic)
        if info is None or (info.error is None and not info.partitions):
            raise UnknownTopicError(f"{context}: topic {topic!r} does not exist", record=record)
        if info.error is not None:
            raise from_kafka_error(info.error, context=context, record=record)
        self._known_topics.add(topic)

    def _check_telemetry(self) -> None:
        tel = self._telemetry
        self._observed = tel is not None and (tel.tracing_enabled() or tel.metrics_enabled())

    def _on_client_error(self, err: Any) -> None:
        error = from_kafka_error(err, context="producer", transactional=self._transactional)
        if isinstance(error, AuthenticationError):
            self._auth_failure = error  # librdkafka retries; a lookup that times out names it
            _log.error("%s", error)
        elif error.fatal or isinstance(error, AuthorizationError):
            if self._fatal is None:
                self._fatal = error
            _log.error("%s", error)
        else:
            _log.warning("%s", error)

    def _raise_fatal(self) -> None:
        if self._fatal is not None:
            raise self._fatal

    # called by DeliveryHandle (see sdk.producer._records._Owner)
    def _poll(self, timeout: float) -> Any:
        client = self._client
        if client is None:
            return 0
        with translating("poll"):
            return client.poll(timeout)

    def _delivered(self, handle: DeliveryHandle) -> None:
        self.delivered += 1
        tel = self._telemetry
        if tel is not None and isinstance(handle, _TimedHandle):
            msg = handle._state
            tel.delivered(msg.topic(), msg.partition(), time.perf_counter() - handle._t0)
        if self._user_callback is not None:
            self._user_callback(handle)

    def _failed(self, handle: DeliveryHandle, err: Any) -> KafkaClientError:
        self.failed += 1
        error = from_kafka_error(
            err,
            context=f"delivery to {handle.record.topic!r}",
            record=handle.record,
            transactional=self._transactional,
        )
        if error.code in _UNKNOWN_PARTITION_CODES:
            self._router.invalidate(handle.record.topic)
        with self._lock:
            self._failures.append(error)
        handle._state = error
        if self._telemetry is not None and isinstance(handle, _TimedHandle):
            self._telemetry.delivery_failed(
                handle.record.topic, type(error).__name__, handle.record.partition
            )
        if self._user_callback is not None:
            self._user_callback(handle)
        return error

    def _discard_failure(self, error: KafkaClientError | None) -> None:
        with self._lock:
            self._failures = [f for f in self._failures if f is not error]

    # ------------------------------------------------------------------ transactions
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
            TransactionSession(self, telemetry=self._telemetry)  # registers itself
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
    def transaction(self, timeout: float = 60.0) -> Iterator[Producer]:
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
        """Queue a handler's :class:`OutputRecord` without a handle (failures: flush)."""
        value, key = out.value, out.key
        # confluent-kafka sends a str UTF-8 encoded; the Producer's serializers take bytes
        if type(value) is str:
            value = value.encode()
        if type(key) is str:
            key = key.encode()
        headers = None if out.headers is None else list(out.headers)
        record = _new_record(ProducerRecord, (out.topic, value, key, headers, out.partition, None))
        client = self._client if self._state is ProducerState.OPEN else self._ensure_client()
        if self._observed:
            self._send_observed(client, record)
        else:
            self._produce(client, record, self._on_batch_delivery)
            if span is not None:
                span.add()
        with translating(f"send to {out.topic!r}", abortable=True):
            client.poll(0)

    def _take_failures(self) -> list[KafkaClientError]:
        """The delivery failures collected since the last call (and forget them)."""
        with self._lock:
            failures, self._failures = self._failures, []
        return failures

    def _drop_client(self) -> Any:
        """Forget the client without flushing (the session recreates it: a new epoch).

        Returns:
            The dropped client (the caller purges or abandons it), or None.
        """
        with self._lock:
            client, self._client = self._client, None
            self._failures = []
        self._fatal = None
        self._auth_failure = None
        if self._state is ProducerState.OPEN:
            self._state = ProducerState.NEW
        return client


def _attach(exc: SdkError, record: ProducerRecord) -> None:
    if getattr(exc, "record", None) is None:
        exc.record = record  # type: ignore[attr-defined]


def _config_error(exc: Exception) -> ConfigurationError:
    text = exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else str(exc)
    return ConfigurationError(f"librdkafka refused the producer configuration: {text}")


class _TimedHandle(DeliveryHandle):
    """A handle that remembers when it was sent (delivery latency for the metrics)."""

    __slots__ = ("_t0",)
    _t0: float

    def _deliver(self, err: Any, msg: Any) -> None:
        if err is None:
            self._state = msg
            self._owner._delivered(self)
        else:
            self._owner._failed(self, err)
