"""The SDK producer: a guarantee-shaped wrapper that holds a ``confluent_kafka.Producer``.

This module has the Producer's construction and public API, with ``send()``'s fast path: bytes
in, librdkafka places, topic known -> straight to ``client.produce``. The rest is held by the
Producer, one object each: the client and its lifecycle (``_client_slot``), the general send
path (``_sender``) and the record path under it (``_enqueue``), the transactional side
(``_transactions``, which :mod:`sdk.core.session` drives); ``send_many``/``send_batch`` share
one loop (``_batch``). The public transaction methods are defined in ``_transaction_methods``
and bound into the class body.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable, Mapping
from contextlib import suppress
from types import EllipsisType, TracebackType
from typing import Any, Literal

from confluent_kafka import KafkaError

from sdk._client import Produce, ProducerClient
from sdk._config import ClientConfig
from sdk._deprecation import REMOVED_IN, renamed, renamed_default, warn_renamed
from sdk.errors import ConfigurationError, KafkaClientError, SdkError
from sdk.lifecycle import Lifecycle
from sdk.observability import Telemetry
from sdk.partitioners import Partitioner, PartitionRouter
from sdk.producer import _transaction_methods as _txn
from sdk.producer._batch import enqueue_each
from sdk.producer._client_errors import ClientErrors
from sdk.producer._client_slot import ClientSlot
from sdk.producer._enqueue import RecordPath
from sdk.producer._handle import HotPath
from sdk.producer._records import DeliveryHandle, HeaderPairs, ProducerRecord, RecordMetadata
from sdk.producer._sender import Sender
from sdk.producer._transactions import TransactionalOutput
from sdk.profiles import Guarantee, ProducerProfile
from sdk.serialization import Serializer, bind_serializer, by_topic

__all__ = ["Producer"]

_new_handle = object.__new__


class Producer:
    """Produce records with the delivery guarantee of a :class:`~sdk.profiles.ProducerProfile`.

    The profile fixes acks, retries, idempotence, in-flight requests and (exactly_once) the
    transactional id; this class adds serializers, partitioner routing, delivery handles, a
    bounded wait when librdkafka's queue is full, and errors that keep the record. No network
    I/O happens before the first send (the client is created lazily).

    Example::

        with Producer(profile, value_serializer="json") as producer:
            handle = producer.send("orders", {"id": 1}, key="1")
            print(handle.result(timeout_s=10))   # RecordMetadata(topic=..., partition=..., ...)

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
        queue_full_timeout: Deprecated name of ``queue_full_timeout_s``, removed in 0.3.
        metadata_timeout: Deprecated name of ``metadata_timeout_s``, removed in 0.3.

    Raises:
        ConfigurationError: Unknown serializer or partitioner, or an exactly_once prefix profile
            without ``transactional_id``.
    """

    _handle_type: type[DeliveryHandle] = DeliveryHandle  # sdk.aio: a handle with a future
    # what a handle reports to (sdk.producer._records._Owner): the ledger's callbacks, bound
    # once in __init__ so that a delivery costs no extra call
    _delivered: Callable[[DeliveryHandle], None]
    _failed: Callable[[DeliveryHandle, KafkaError], KafkaClientError]
    _poll: Callable[[float], int]  # serves callbacks while a handle waits (ClientSlot.serve)

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
        client_factory: Callable[[ClientConfig], ProducerClient] | None = None,
        queue_full_timeout: float | None = None,
        metadata_timeout: float | None = None,
    ) -> None:
        if queue_full_timeout is not None or metadata_timeout is not None:
            warnings.warn(  # the names before every timeout in seconds ended in _s
                "Producer(queue_full_timeout=, metadata_timeout=) are deprecated and removed in "
                f"{REMOVED_IN}: use queue_full_timeout_s= and metadata_timeout_s=",
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
        key_ser = bind_serializer(key_serializer, "key_serializer")
        value_ser = bind_serializer(value_serializer, "value_serializer")
        self._telemetry: Telemetry | None = (
            None if telemetry is False else (telemetry or Telemetry.default())
        )
        base = profile.render(transactional_id)  # refuses a prefix-only exactly_once profile
        router = PartitionRouter(
            partitioner or profile.partitioner,
            base,
            metadata_max_age_s=partition_refresh_s,
            metadata_timeout_s=metadata_timeout_s,
        )
        self._config: ClientConfig = {**base, **router.producer_config()}
        self._transactional = profile.guarantee is Guarantee.EXACTLY_ONCE
        self._known_topics: set[str] = set()
        """Topics whose lookup succeeded: only these take the fast path (no lookup needed)."""
        errors = ClientErrors(transactional=self._transactional)
        path = RecordPath(
            key_ser,
            value_ser,
            router=router,
            errors=errors,
            known_topics=self._known_topics,
            check_topics=check_topics,
            metadata_timeout_s=metadata_timeout_s,
            queue_full_timeout_s=queue_full_timeout_s,
            transactional=self._transactional,
            in_transaction=lambda: self._output.open,
        )
        self._path = path
        self._hot = HotPath(  # on_delivery: called per record
            self._known_topics,
            on_delivery,
            None if path.raw_key else by_topic(key_ser),
            None if path.raw_value else by_topic(value_ser),
            reusable=DeliveryHandle,
        )
        self._raw = path.raw
        # the bound method itself, not a delegating method: no extra call per record
        self._produce = path.produce
        """The general path of a record (:meth:`RecordPath.produce`) under the fast path."""
        self._fast = path.raw and router.native
        """Bytes in and librdkafka places: a record to a known topic goes straight to it."""
        self._slot = slot = ClientSlot(
            client_factory,
            self._config,
            errors=errors,
            router=router,
            hot=self._hot,
            known_topics=self._known_topics,
            telemetry=self._telemetry,
            transactional=self._transactional,
            # send()'s fast path: serializers too (send_many's loop takes bytes in only)
            fast=router.native and self._handle_type is DeliveryHandle,
        )
        """The client, its lifecycle and what its callbacks report (errors, deliveries)."""
        self._ledger = slot.ledger
        self._delivered = self._ledger.on_delivered
        self._failed = self._ledger.on_failed
        self._poll = slot.serve
        self._output = TransactionalOutput(self)
        """The transactional calls and a transaction's outputs (one per producer)."""
        sender = Sender(self, slot, path, self._telemetry, self._output)
        self._send_general = sender.send
        """``send()`` for a record its fast path does not take (:meth:`Sender.send`)."""
        self._send_observed = sender.send_observed

    # ------------------------------------------------------------------ lifecycle
    @property
    def state(self) -> Lifecycle:
        """Where the producer is in its lifecycle."""
        return self._slot.state

    @property
    def config(self) -> ClientConfig:
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

    @property
    def _client(self) -> ProducerClient | None:
        """The client, or None before the first use and after close (the slot's)."""
        return self._slot.client

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

    def close(
        self, timeout_s: float | None = 30.0, *, timeout: float | EllipsisType | None = ...
    ) -> None:
        """Deliver what is queued, then release the client. Idempotent.

        Args:
            timeout_s: Seconds to wait for outstanding deliveries (None: as long as the
                delivery timeout allows).
            timeout: Deprecated name of ``timeout_s``, removed in 0.3.

        Raises:
            KafkaTimeoutError: Records were still undelivered after ``timeout_s``.
            DeliveryError: Records failed since the last ``flush()`` (``.failures``).
        """
        if not isinstance(timeout, EllipsisType):  # None is a value here: wait unbounded
            warn_renamed("Producer.close", "timeout", "timeout_s")
            timeout_s = timeout
        self._slot.close(timeout_s)

    # ------------------------------------------------------------------ sending
    def send(
        self,
        topic: str | ProducerRecord,
        value: Any = None,
        *,
        key: Any = None,
        headers: HeaderPairs | Mapping[str, bytes | str | None] | None = None,
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
            produce is not None  # open, librdkafka places, plain handles, no telemetry
            and headers is None
            and timestamp_ms is None
            and partition is None  # a handle keeps topic, value, key: its record has no partition
            and type(topic) is str
            and topic in hot.known
        ):
            if not self._raw:  # a serializer to call
                return self._send_serializing(produce, topic, value, key)
            if (type(value) is bytes or value is None) and (key is None or type(key) is bytes):
                # straight to librdkafka (_batch.enqueue_each inlines the same test without
                # the partition check: keep the two in step), with a spare handle nobody holds
                # (sdk.producer._handle) or one made without __init__ (as new_handle, inlined:
                # one call less per record), its record built only if asked for
                spare = hot.spare
                try:
                    handle = spare.pop() if spare else _new_handle(DeliveryHandle)
                except IndexError:  # another thread took the last one
                    handle = _new_handle(DeliveryHandle)
                handle._owner, handle._state, handle._record = self, None, None
                handle._topic, handle._value, handle._key = topic, value, key
                try:
                    produce(topic, value, key, -1, handle)  # -1: the partitioner
                    return handle
                except Exception:  # full queue, refusal: the general path retries/translates
                    return self._send_general(topic, value, key, None, None, None, handle)
        return self._send_general(topic, value, key, headers, partition, timestamp_ms, None)

    def _send_serializing(
        self, produce: Produce, topic: str, value: Any, key: Any
    ) -> DeliveryHandle:
        """``send()``'s fast path with a serializer: as the general path, with fewer steps.

        No record object unless an error needs one, a registry serializer's context made once
        per topic, the handle made without ``__init__``; anything unusual (a ``bytes``
        serializer given another type, a serializer returning something else, a refusal)
        takes the general path, which says what is wrong.
        """
        hot = self._hot
        ks, vs = hot.key_serializer, hot.value_serializer
        k, v = key, value
        # key, then value, written out twice: a helper per part would add a call per record
        if ks is not None:
            try:
                k = ks(key, topic)
            except Exception as exc:
                self._path.serializer_failed("key", ProducerRecord(topic, value, key), exc)
        elif key is not None and type(key) is not bytes:
            return self._send_general(topic, value, key, None, None, None, None)
        if vs is not None:
            try:
                v = vs(value, topic)
            except Exception as exc:
                self._path.serializer_failed("value", ProducerRecord(topic, value, key), exc)
        elif value is not None and type(value) is not bytes:
            return self._send_general(topic, value, key, None, None, None, None)
        if (k is not None and type(k) is not bytes) or (v is not None and type(v) is not bytes):
            return self._send_general(topic, value, key, None, None, None, None)
        spare = hot.spare  # as send()'s fast path
        try:
            handle = spare.pop() if spare else _new_handle(DeliveryHandle)
        except IndexError:
            handle = _new_handle(DeliveryHandle)
        handle._owner, handle._state, handle._record = self, None, None
        handle._topic, handle._value, handle._key = topic, value, key
        try:
            produce(topic, v, k, -1, handle)  # -1: the partitioner (positional_produce)
            return handle
        except Exception:  # full queue, refusal: the general path retries / translates
            return self._send_general(topic, value, key, None, None, None, handle)

    def send_and_wait(
        self,
        topic: str | ProducerRecord,
        value: Any = None,
        *,
        key: Any = None,
        headers: HeaderPairs | Mapping[str, bytes | str | None] | None = None,
        partition: int | None = None,
        timeout_s: float | None = None,
        timeout: float | None = None,
    ) -> RecordMetadata:
        """Send one record and wait for its acknowledgement.

        Args:
            topic: The topic, or a complete :class:`ProducerRecord`.
            value: The value.
            key: The key.
            headers: Record headers.
            partition: An explicit partition.
            timeout_s: Seconds to wait (None: until the delivery timeout decides).
            timeout: Deprecated name of ``timeout_s``, removed in 0.3.

        Returns:
            Where the record landed.

        Raises:
            KafkaClientError: The record failed (``.record`` holds it); see :meth:`send`.
            ConfigurationError: Both ``timeout_s`` and ``timeout`` were given.
        """
        timeout_s = renamed("Producer.send_and_wait", "timeout", timeout, "timeout_s", timeout_s)
        handle = self.send(topic, value, key=key, headers=headers, partition=partition)
        try:
            return handle.result(timeout_s)
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
            self._path.check_topic(self._slot.ensure(), record)

    def poll(self, timeout_s: float = 0.0, *, timeout: float | None = None) -> int:
        """Serve delivery callbacks.

        Args:
            timeout_s: Seconds to wait for at least one event.
            timeout: Deprecated name of ``timeout_s``, removed in 0.3.

        Returns:
            The number of events served.

        Raises:
            KafkaClientError: A fatal client error.
        """
        timeout_s = renamed_default("Producer.poll", "timeout", timeout, "timeout_s", timeout_s)
        return self._slot.poll(timeout_s)

    def flush(self, timeout_s: float | None = None, *, timeout: float | None = None) -> None:
        """Wait until every queued record is acknowledged or failed.

        Args:
            timeout_s: Seconds to wait; None waits as long as the delivery timeout allows.
            timeout: Deprecated name of ``timeout_s``, removed in 0.3.

        Raises:
            KafkaTimeoutError: Records were still queued after ``timeout_s`` (nothing is lost:
                they stay queued and their handles are still pending).
            DeliveryError: Records failed since the last ``flush()``; ``.failures`` lists each
                error with its record. The list is reset once reported.
            ConfigurationError: Both ``timeout_s`` and ``timeout`` were given.
        """
        self._slot.flush(renamed("Producer.flush", "timeout", timeout, "timeout_s", timeout_s))

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

    # ------------------------------------------------------------------ transactions
    # defined in _transaction_methods (this module's size): the same functions, bound here
    transactional_output = _txn.transactional_output
    init_transactions = _txn.init_transactions
    begin_transaction = _txn.begin_transaction
    send_offsets_to_transaction = _txn.send_offsets_to_transaction
    commit_transaction = _txn.commit_transaction
    abort_transaction = _txn.abort_transaction
    transaction = _txn.transaction
