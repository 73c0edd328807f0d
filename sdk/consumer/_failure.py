"""Decoding records and applying the FailurePolicy: retry the handler, then DLQ or stop."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from sdk._client import KafkaMessage
from sdk.consumer._records import ConsumerRecord, ConsumerStats
from sdk.consumer._registry_wait import RegistryWait, as_unavailable
from sdk.errors import (
    ConfigurationError,
    HandlerError,
    SchemaRegistryUnavailableError,
    SdkError,
    SerializationError,
)
from sdk.failure import HandlerRunner, dead_letter
from sdk.observability import Telemetry
from sdk.producer import Producer, ProducerRecord
from sdk.profiles import ConsumerProfile, Guarantee, ProducerProfile, QueueProfile
from sdk.serialization import Deserializer, bind_deserializer

__all__ = ["DeadLetterSink", "FailurePath", "RecordDecoder", "dead_letter_sink"]

_log = logging.getLogger("sdk.consumer")

A = TypeVar("A")
"""What a handler takes: a record, or a batch of them."""


class RecordDecoder:
    """Turns a ``confluent_kafka.Message`` into a :class:`ConsumerRecord`."""

    def __init__(self, key: str | Deserializer, value: str | Deserializer) -> None:
        self._key = bind_deserializer(key, "key_deserializer")
        self._value = bind_deserializer(value, "value_deserializer")
        bytes_in = bind_deserializer("bytes", "value_deserializer")
        self.raw = self._key is bytes_in and self._value is bytes_in
        """Both deserializers are ``bytes``: a record is the message's key and value as is."""
        self.registry_wait = RegistryWait.for_serdes(key, value)
        """Retries a record while its schema registry is unavailable (never a poison pill)."""
        self._waiting = False

    def try_decode(self, message: KafkaMessage) -> ConsumerRecord | None:
        """Like :meth:`decode`, but None for a poison pill."""
        try:
            return self.decode(message)
        except SerializationError:
            return None

    def decode(self, message: KafkaMessage) -> ConsumerRecord:
        """Deserialize key and value.

        A schema registry that does not answer is retried on the same record
        (:class:`RegistryWait`), not taken for a poison pill.

        Raises:
            SerializationError: A deserializer failed (a poison pill); ``.record`` is the raw
                ``confluent_kafka.Message`` and ``__cause__`` the deserializer's exception.
            SchemaRegistryUnavailableError: The registry stayed unavailable for the wait's
                timeout.
        """
        topic = message.topic()
        part = "key"
        try:
            key = self._key(message.key(), message)
            part = "value"
            value = self._value(message.value(), message)
        except Exception as exc:
            unavailable = as_unavailable(exc, message)
            if unavailable is not None:  # the registry's fault, not the record's
                unavailable.record = message
                if self._waiting:
                    raise unavailable from exc
                return self._wait_for_registry(message, unavailable)
            raise SerializationError(
                f"deserializing the {part} of {topic}[{message.partition()}]@{message.offset()} "
                f"failed: {exc!r}",
                record=message,
            ) from exc
        return ConsumerRecord(key, value, message)

    def _wait_for_registry(
        self, message: KafkaMessage, error: SchemaRegistryUnavailableError
    ) -> ConsumerRecord:
        self._waiting = True
        try:
            return self.registry_wait.retry(lambda: self.decode(message), message, error)
        finally:
            self._waiting = False


class DeadLetterSink:
    """Sends failed records to the dead-letter topic and waits for their acknowledgement.

    The producer is an SDK :class:`~sdk.producer.Producer` with an ``at_least_once`` profile
    (acks=all, idempotence), created on first use. Extra librdkafka keys may tune it but can
    never weaken it (the profile refuses e.g. ``acks=1``).

    Args:
        profile: The consumer or queue profile (bootstrap servers, security,
            ``failure.dlq_topic``).
        producer_config: Extra librdkafka keys for the dead-letter producer.
        timeout_s: Seconds to wait for each dead-letter record's acknowledgement.

    Raises:
        ConfigurationError: The profile has no ``failure.dlq_topic``, or an extra key would
            weaken the at-least-once producer (``field`` starts ``dead_letter_producer_config``).
    """

    def __init__(
        self,
        profile: ConsumerProfile | QueueProfile,
        producer_config: Mapping[str, Any] | None = None,
        *,
        timeout_s: float = 30.0,
    ) -> None:
        if not profile.failure.dlq_topic:
            raise ConfigurationError(
                "failure.dlq_topic: dead-lettering needs a dead-letter topic in the profile",
                field="failure.dlq_topic",
            )
        self.topic = profile.failure.dlq_topic
        try:
            self._profile = ProducerProfile(
                guarantee=Guarantee.AT_LEAST_ONCE,
                bootstrap_servers=profile.bootstrap_servers,
                security=profile.security,
                extras=dict(producer_config or {}),
            )
        except ConfigurationError as exc:
            raise ConfigurationError(
                f"dead_letter_producer_config: {exc}",
                field=f"dead_letter_producer_config.{exc.field}",
            ) from exc
        self._timeout = timeout_s
        self._producer: Producer | None = None
        # concurrent runs (Consumer.run(concurrency=N)) dead-letter from worker threads: one
        # producer, created once, and one record waited for at a time
        self._lock = threading.Lock()

    def send(
        self, message: KafkaMessage, error: BaseException, *, attempts: int, stage: str
    ) -> None:
        """Produce the original record (raw bytes) to the DLQ and wait until it is acknowledged.

        Headers added to the original ones: :data:`sdk.failure.DLQ_HEADERS` (the one
        dead-letter format of the SDK, also the Processor's and Spark's).

        Args:
            message: The original ``confluent_kafka.Message``.
            error: Why it failed (a HandlerError or SerializationError; its cause is reported).
            attempts: How many times the handler ran (0 for a poison pill).
            stage: ``"handler"`` or ``"deserialize"``.

        Raises:
            KafkaClientError: The dead-letter record was not acknowledged (the subclass says
                why; ``.record`` holds it). The caller must then not store the offset.
        """
        out = dead_letter(message, self.topic, error, attempts=attempts, stage=stage)
        record = ProducerRecord(self.topic, out.value, out.key, out.headers)
        with self._lock:
            if self._producer is None:
                self._producer = Producer(self._profile)
            self._producer.send_and_wait(record, timeout_s=self._timeout)

    def close(self) -> None:
        """Flush and release the producer (if one was created).

        Raises:
            KafkaClientError: Records were still undelivered.
        """
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.close(self._timeout)


def dead_letter_sink(
    profile: ConsumerProfile | QueueProfile, producer_config: Mapping[str, Any] | None
) -> DeadLetterSink | None:
    """The profile's dead-letter sink, or None without ``failure.dlq_topic``.

    Raises:
        ConfigurationError: A dead-letter producer config without a dead-letter topic, or one
            that would weaken the at-least-once producer.
    """
    if profile.failure.dlq_topic:
        return DeadLetterSink(profile, producer_config)
    if producer_config:
        raise ConfigurationError(
            "dead_letter_producer_config: the profile has no failure.dlq_topic",
            field="dead_letter_producer_config",
        )
    return None


class FailurePath:
    """Decode records and run the handler under the profile's FailurePolicy.

    A failing handler is retried (tenacity, per ``failure``); then its records are
    dead-lettered (each acknowledged by the DLQ before the caller stores its offset) or the
    error is raised. A record that cannot be deserialized (a poison pill) takes the same path
    without retries. Nothing is ever skipped silently.

    Args:
        profile: The consumer profile (``failure`` policy, DLQ settings).
        stats: The consumer's counters.
        key_deserializer: Name or callable.
        value_deserializer: Name or callable.
        dead_letter_producer_config: Extra librdkafka keys for the DLQ producer.

    Raises:
        ConfigurationError: Unknown deserializer, bad ``retry_on`` type, or a DLQ producer
            config without a DLQ topic or one that would weaken it.
    """

    def __init__(
        self,
        profile: ConsumerProfile,
        stats: ConsumerStats,
        key_deserializer: str | Deserializer,
        value_deserializer: str | Deserializer,
        dead_letter_producer_config: Mapping[str, Any] | None,
    ) -> None:
        self.policy = profile.failure
        self.stats = stats
        self.decoder = RecordDecoder(key_deserializer, value_deserializer)
        self.decoder.registry_wait.on_retry = self._count_registry_retry
        self._runner = HandlerRunner(profile.failure, on_retry=self._count_retry)
        self.telemetry: Telemetry | None = None
        self.dlq = dead_letter_sink(profile, dead_letter_producer_config)

    def decode(self, message: KafkaMessage) -> ConsumerRecord | None:
        """Decode; a poison pill is dead-lettered (returns None) or raised.

        Raises:
            SerializationError: A poison pill with ``on_failure="stop"``.
            KafkaClientError: The dead-letter record was not acknowledged.
        """
        try:
            return self.decoder.decode(message)
        except SerializationError as exc:
            self.stats.deserialization_failures += 1
            self._fail(exc, [message], attempts=0, stage="deserialize")
            return None

    def handle(
        self,
        handler: Callable[[A], object],
        arg: A,
        messages: list[KafkaMessage],
        first: Exception | None = None,
    ) -> None:
        """Run ``handler(arg)`` (a record or a batch) with retries; its result is ignored.

        Args:
            handler: The user's handler.
            arg: A record or a batch.
            messages: The messages behind ``arg``.
            first: The caller's own first attempt already failed with this (the hot loop):
                go on with the retries.

        Raises:
            HandlerError: Every attempt failed and ``on_failure="stop"``.
            KafkaClientError: The dead-letter records were not acknowledged.
        """

        def call(value: A) -> None:
            handler(value)

        try:
            if first is None:
                self._runner.run(call, arg)
            else:
                self._runner.retry(call, arg, first)
        except HandlerError as exc:
            self.stats.handler_failures += len(messages)
            self._fail(exc, messages, attempts=exc.attempts, stage="handler")
            return
        self.stats.handled += len(messages)

    def give_up(self, error: SdkError, message: KafkaMessage, *, attempts: int) -> None:
        """The policy's last step for a record whose handler failed otherwise (a timeout).

        Raises:
            SdkError: ``error``, with ``on_failure="stop"`` or no dead-letter topic.
            KafkaClientError: The dead-letter record was not acknowledged.
        """
        self.stats.handler_failures += 1
        self._fail(error, [message], attempts=attempts, stage="handler")

    def _count_registry_retry(self) -> None:
        self.stats.registry_retries += 1
        if self.telemetry is not None:
            self.telemetry.retry("schema_registry")

    def _count_retry(self) -> None:
        self.stats.retries += 1
        if self.telemetry is not None:
            self.telemetry.retry("handler")

    def _fail(
        self, error: SdkError, messages: list[KafkaMessage], *, attempts: int, stage: str
    ) -> None:
        if self.policy.on_failure == "stop" or self.dlq is None:
            _log.error("stopping: %s", error)
            raise error
        for message in messages:
            self.dlq.send(message, error, attempts=attempts, stage=stage)
            self.stats.dead_lettered += 1
            if self.telemetry is not None:
                self.telemetry.dead_lettered(
                    message.topic(),
                    self.policy.dlq_topic or "",
                    error_type=type(error).__name__,
                )

    def close(self) -> None:
        """Flush and release the dead-letter producer.

        Raises:
            KafkaClientError: Dead-letter records were still undelivered.
        """
        if self.dlq is not None:
            self.dlq.close()
