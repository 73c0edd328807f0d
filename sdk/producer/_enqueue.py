"""The general enqueue path: one record to one ``client.produce`` call, every step applied.

``Producer.send()`` and the ``send_many``/``send_batch`` loop hand a record straight to
librdkafka when there is nothing to do (bytes in, librdkafka places it, the topic is known).
Every other record takes :meth:`RecordPath.produce`: serialize, look a new topic up once, place
it with a Python partitioner, produce, and wait (bounded) while librdkafka's queue is full.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, NoReturn

from sdk._client import DeliveryCallback, ProducerClient, takes_all_positional, translating
from sdk.errors import (
    KafkaClientError,
    KafkaTimeoutError,
    SchemaRegistryUnavailableError,
    SdkError,
    SerializationError,
    TransactionError,
)
from sdk.partitioners import PartitionRouter
from sdk.producer._client_errors import ClientErrors
from sdk.producer._delivery import UNKNOWN_PARTITION_CODES
from sdk.producer._records import ProducerRecord
from sdk.serialization import BoundSerializer, asks_registry, bind_serializer, serializer_name

__all__ = ["RecordPath"]


class RecordPath:
    """Serialize, check, place and produce one record: the path under the Producer's fast path.

    Args:
        key_serializer: The resolved key serializer.
        value_serializer: The resolved value serializer.
        router: The producer's partition router (native or Python placement).
        errors: The client's reported errors (the topic lookup explains a failure with them).
        known_topics: Topics already looked up; shared with the Producer, whose fast path
            skips the lookup for them. A topic is added once its lookup succeeds.
        check_topics: Look each new topic up before its first record.
        metadata_timeout_s: Seconds for that lookup.
        queue_full_timeout_s: Seconds to keep serving callbacks while the queue is full.
        transactional: Whether the producer is exactly_once.
        in_transaction: Whether a transaction is open now (a refusal then makes it abortable).

    Attributes:
        raw_key: The key serializer is ``bytes`` (no serializer call).
        raw_value: The value serializer is ``bytes``.
        raw: Both serializers are ``bytes``: bytes in, bytes out, no serializer call.
        asks_registry: A serializer may ask a schema registry over HTTP (its first call per
            subject; later calls hit its cache).
    """

    def __init__(
        self,
        key_serializer: BoundSerializer,
        value_serializer: BoundSerializer,
        *,
        router: PartitionRouter,
        errors: ClientErrors,
        known_topics: set[str],
        check_topics: bool,
        metadata_timeout_s: float,
        queue_full_timeout_s: float,
        transactional: bool,
        in_transaction: Callable[[], bool],
    ) -> None:
        self._key_ser = key_serializer
        self._value_ser = value_serializer
        bytes_ser = bind_serializer("bytes", "value_serializer")
        # bytes in, bytes out: skip the serializer call on the hot path
        self.raw_key = key_serializer is bytes_ser
        self.raw_value = value_serializer is bytes_ser
        self.raw = self.raw_key and self.raw_value
        self.asks_registry = asks_registry(key_serializer) or asks_registry(value_serializer)
        self._router = router
        self._native = router.native
        self._errors = errors
        self._known_topics = known_topics
        self._check_topics = check_topics
        self._metadata_timeout = metadata_timeout_s
        self._queue_full_timeout = queue_full_timeout_s
        self._transactional = transactional
        self._in_transaction = in_transaction
        self._client_type: type | None = None  # the type _positional was found for
        self._positional = False

    def produce(self, client: Any, record: ProducerRecord, callback: DeliveryCallback) -> None:
        """Queue one record with every step the fast path skips.

        Args:
            client: The confluent-kafka client.
            record: The record as the caller gave it (carried by every error).
            callback: The delivery callback (a handle's, or a shared one).

        Raises:
            SerializationError: A serializer failed or did not return bytes.
            UnknownTopicError: The topic does not exist (``check_topics``).
            KafkaTimeoutError: The local queue stayed full for ``queue_full_timeout_s``.
            TransactionError: An exactly_once producer sent outside a transaction.
            KafkaClientError: Any other refusal by librdkafka (the record is on ``.record``).
        """
        topic, key, value = record.topic, record.key, record.value
        if not (
            self.raw_key
            and self.raw_value
            and (key is None or type(key) is bytes)
            and (value is None or type(value) is bytes)
        ):
            key, value = self.serialize(record)
        if topic not in self._known_topics:
            self.check_topic(client, record)
        partition = record.partition
        if partition is None and not self._native:
            try:
                partition = self._router.route(topic, key, value)
            except SdkError as exc:
                _attach(exc, record)
                raise
        if record.headers is None and record.timestamp_ms is None:
            try:  # the common case: no kwargs dict, no retry loop
                if type(client) is not self._client_type:  # the client's type, not the
                    # client: a closed producer's client must not stay alive here
                    self._client_type = type(client)
                    self._positional = takes_all_positional(self._client_type)
                p = -1 if partition is None else partition  # -1: the partitioner
                if self._positional:  # on_delivery fifth: see positional_produce
                    client.produce(topic, value, key, p, callback)
                else:  # what positional_produce's adapter does
                    client.produce(topic, value, key, p, on_delivery=callback)
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

    def check_topic(self, client: ProducerClient, record: ProducerRecord) -> None:
        """Look the record's topic up once (``check_topics``), then remember it.

        Raises:
            UnknownTopicError: The topic does not exist.
            KafkaClientError: The lookup failed otherwise.
        """
        if self._check_topics:
            self._errors.check_topic(client, record, self._metadata_timeout)
        # unchecked topics too: the fast path then skips the general path for their records
        self._known_topics.add(record.topic)

    def serialize(self, record: ProducerRecord) -> tuple[bytes | None, bytes | None]:
        """The record's key and value through the serializers.

        Raises:
            SerializationError: A serializer failed or did not return bytes (with the record).
            SchemaRegistryUnavailableError: A registry serializer's registry did not answer
                (transient: the record was not queued; send it again).
        """
        topic = record.topic
        try:
            key = self._key_ser(record.key, record)
        except Exception as exc:
            self.serializer_failed("key", record, exc)
        try:
            value = self._value_ser(record.value, record)
        except Exception as exc:
            self.serializer_failed("value", record, exc)
        for part, data in (("key", key), ("value", value)):
            if data is not None and not isinstance(data, bytes):
                raise SerializationError(
                    f"the {part} serializer returned {type(data).__name__}, not bytes, for a "
                    f"record to {topic!r}",
                    record=record,
                )
        return key, value

    def serializer_failed(self, part: str, record: ProducerRecord, exc: Exception) -> NoReturn:
        """Raise what a serializer's failure on ``record``'s ``part`` ("key"/"value") is.

        Raises:
            SerializationError: ``exc`` itself if it is one (with the record), else one that
                names the serializer, the part and the topic (``__cause__``: ``exc``).
            SchemaRegistryUnavailableError: ``exc`` itself (with the record).
        """
        if isinstance(exc, SerializationError | SchemaRegistryUnavailableError):
            exc.record = record
            raise exc
        obj, serializer = (
            (record.key, self._key_ser) if part == "key" else (record.value, self._value_ser)
        )
        raise SerializationError(
            _failed(part, obj, record.topic, exc, serializer), record=record
        ) from exc

    def _produce_bounded(
        self,
        client: ProducerClient,
        topic: str,
        value: bytes | None,
        kwargs: dict[str, Any],
        record: ProducerRecord,
    ) -> None:
        in_transaction = self._in_transaction()
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
                if exc.code in UNKNOWN_PARTITION_CODES:
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


def _attach(exc: SdkError, record: ProducerRecord) -> None:
    if getattr(exc, "record", None) is None:
        exc.record = record  # type: ignore[attr-defined]


_SUGGESTED = {dict: "json", list: "json", int: "json", float: "json", bool: "json", str: "str"}


def _failed(part: str, obj: object, topic: str, exc: Exception, serializer: object) -> str:
    """What failed, and the serializer that fits the object when the configured one did not."""
    name = serializer_name(serializer)
    with_name = "" if name in _SUGGESTED.values() or name == "bytes" else f" with {name}"
    message = f"serializing the {part} of a record for {topic!r}{with_name} failed: {exc}"
    fit = _SUGGESTED.get(type(obj))
    if fit is not None and isinstance(exc, TypeError):
        message += f" (a {type(obj).__name__} {part}: pass {part}_serializer={fit!r})"
    return message
