"""Decoding records and applying the FailurePolicy: retry the handler, then DLQ or stop."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sdk.consumer._records import ConsumerRecord, headers_of
from sdk.errors import ConfigurationError, SerializationError
from sdk.processor._failure import HandlerRunner, dead_letter
from sdk.producer import Producer, ProducerRecord
from sdk.profiles import ConsumerProfile, Guarantee, ProducerProfile
from sdk.serialization import Deserializer, resolve_deserializer

__all__ = ["DeadLetterSink", "RecordDecoder", "run_handler"]


class RecordDecoder:
    """Turns a ``confluent_kafka.Message`` into a :class:`ConsumerRecord`."""

    def __init__(self, key: str | Deserializer, value: str | Deserializer) -> None:
        self._key = resolve_deserializer(key, "key_deserializer")
        self._value = resolve_deserializer(value, "value_deserializer")

    def decode(self, message: Any) -> ConsumerRecord:
        """Deserialize key and value.

        Raises:
            SerializationError: A deserializer failed (a poison pill); ``.record`` is the raw
                ``confluent_kafka.Message`` and ``__cause__`` the deserializer's exception.
        """
        topic = message.topic()
        part = "key"
        try:
            key = self._key(message.key(), topic)
            part = "value"
            value = self._value(message.value(), topic)
        except Exception as exc:
            raise SerializationError(
                f"deserializing the {part} of {topic}[{message.partition()}]@{message.offset()} "
                f"failed: {exc!r}",
                record=message,
            ) from exc
        _, timestamp = message.timestamp()
        return ConsumerRecord(
            topic=topic,
            partition=message.partition(),
            offset=message.offset(),
            key=key,
            value=value,
            headers=headers_of(message),
            timestamp_ms=timestamp if timestamp > 0 else None,
            raw=message,
        )


def run_handler(runner: HandlerRunner, handler: Callable[[Any], Any], arg: Any) -> None:
    """Run ``handler(arg)`` with the runner's retries, ignoring what the handler returns.

    Raises:
        HandlerError: Every attempt failed (``.record`` is ``arg``, ``.attempts`` the count).
    """

    def call(value: Any) -> None:
        handler(value)

    runner.run(call, arg)


def _qualified(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"


class DeadLetterSink:
    """Sends failed records to the dead-letter topic and waits for their acknowledgement.

    The producer is an SDK :class:`~sdk.producer.Producer` with an ``at_least_once`` profile
    (acks=all, idempotence), created on first use. Extra librdkafka keys may tune it but can
    never weaken it (the profile refuses e.g. ``acks=1``).

    Args:
        profile: The consumer profile (bootstrap servers, security, ``failure.dlq_topic``).
        producer_config: Extra librdkafka keys for the dead-letter producer.
        timeout_s: Seconds to wait for each dead-letter record's acknowledgement.

    Raises:
        ConfigurationError: The profile has no ``failure.dlq_topic``, or an extra key would
            weaken the at-least-once producer (``field`` starts ``dead_letter_producer_config``).
    """

    def __init__(
        self,
        profile: ConsumerProfile,
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

    def send(self, message: Any, error: BaseException, *, attempts: int, stage: str) -> None:
        """Produce the original record (raw bytes) to the DLQ and wait until it is acknowledged.

        Headers added to the original ones: ``dlq.topic``, ``dlq.partition``, ``dlq.offset``,
        ``dlq.error`` (repr), ``dlq.error.type``, ``dlq.error.message``, ``dlq.attempts`` and
        ``dlq.stage`` (``handler`` or ``deserialize``).

        Args:
            message: The original ``confluent_kafka.Message``.
            error: Why it failed (a HandlerError or SerializationError; its cause is reported).
            attempts: How many times the handler ran (0 for a poison pill).
            stage: ``"handler"`` or ``"deserialize"``.

        Raises:
            KafkaClientError: The dead-letter record was not acknowledged (the subclass says
                why; ``.record`` holds it). The caller must then not store the offset.
        """
        out = dead_letter(message, self.topic, error)
        cause = error.__cause__ or error
        headers = [
            *(out.headers or ()),
            ("dlq.error.type", _qualified(cause)),
            ("dlq.error.message", str(cause)[:1000]),
            ("dlq.attempts", str(attempts)),
            ("dlq.stage", stage),
        ]
        if self._producer is None:
            self._producer = Producer(self._profile)
        record = ProducerRecord(self.topic, out.value, out.key, headers)
        self._producer.send_and_wait(record, timeout=self._timeout)

    def close(self) -> None:
        """Flush and release the producer (if one was created).

        Raises:
            KafkaClientError: Records were still undelivered.
        """
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.close(self._timeout)
