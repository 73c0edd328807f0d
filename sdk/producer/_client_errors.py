"""The producer's client: its creation, and what librdkafka says about it outside a delivery.

Client-level errors (a fatal CLUSTER_AUTHORIZATION_FAILED for the idempotent producer id, bad
credentials) come through ``error_cb``, not from the call they break; :class:`ClientErrors`
keeps them so that the next ``poll``/``flush`` and the topic lookup can raise them by name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from confluent_kafka import KafkaError

from sdk._client import ProducerClient, translating
from sdk._config import ClientConfig
from sdk._connection import BrokerContact
from sdk.errors import (
    AuthenticationError,
    AuthorizationError,
    BrokerUnreachableError,
    ConfigurationError,
    KafkaClientError,
    KafkaTimeoutError,
    UnknownTopicError,
    from_kafka_error,
)
from sdk.producer._records import ProducerRecord

__all__ = ["ClientErrors", "config_error"]

_log = logging.getLogger("sdk.producer")


class ClientErrors:
    """The ``error_cb`` of one producer's client and what it reported.

    Args:
        transactional: Whether the producer is exactly_once (decides the translated type).

    Attributes:
        fatal: The first fatal (or authorization) error; the client is unusable after it.
        auth_failure: The last authentication failure (librdkafka keeps retrying).
        contact: The current client's contact with the cluster (its ``logger`` too); None
            before the first client.
    """

    def __init__(self, *, transactional: bool) -> None:
        self._transactional = transactional
        self.fatal: KafkaClientError | None = None
        self.auth_failure: AuthenticationError | None = None
        self.contact: BrokerContact | None = None

    def create_client(
        self, factory: Callable[[ClientConfig], ProducerClient] | None, config: ClientConfig
    ) -> ProducerClient:
        """Create the confluent-kafka client with :meth:`on_error` as its ``error_cb``.

        Args:
            factory: Builds the client from its config; None: ``confluent_kafka.Producer``.
            config: The rendered librdkafka configuration.

        Raises:
            ConfigurationError: librdkafka refused a key or value of the configuration.
        """
        if factory is None:
            from confluent_kafka import Producer as _Client

            factory = _Client
        # a new client (a new transactional epoch) of the same cluster keeps the contact made
        contact = BrokerContact(config)
        if self.contact is not None and self.contact.reached:
            contact.note_reached()
        self.contact = contact
        try:
            # error_cb: librdkafka's client-level errors (e.g. a fatal
            # CLUSTER_AUTHORIZATION_FAILED for the idempotent producer id) reach the SDK
            # instead of escaping from flush()/poll() as a raw KafkaError; logger: librdkafka's
            # log to sdk.librdkafka, repeats collapsed
            return factory(dict(config, error_cb=self.on_error, logger=contact))
        except Exception as exc:  # KafkaException for a bad librdkafka key/value
            raise config_error(exc) from exc

    def on_error(self, err: KafkaError) -> None:
        """The client's ``error_cb``: translate, keep what must be raised later, log."""
        contact = self.contact
        if contact is not None and contact.on_error(err):
            return  # a connection error: logged there, collapsed (librdkafka repeats them)
        error = from_kafka_error(err, context="producer", transactional=self._transactional)
        if isinstance(error, AuthenticationError):
            self.auth_failure = error  # librdkafka retries; a lookup that times out names it
            _log.error("%s", error)
        elif error.fatal or isinstance(error, AuthorizationError):
            if self.fatal is None:
                self.fatal = error
            _log.error("%s", error)
        else:
            _log.warning("%s", error)

    def raise_fatal(self) -> None:
        """Raise the fatal error, if the client had one.

        Raises:
            KafkaClientError: The fatal error error_cb reported.
        """
        if self.fatal is not None:
            raise self.fatal

    def clear(self) -> None:
        """Forget what was reported (the client is being replaced)."""
        self.fatal = None
        self.auth_failure = None

    def check_topic(self, client: ProducerClient, record: ProducerRecord, timeout: float) -> None:
        """Look the record's topic up, so that an unknown topic fails before it is queued.

        Args:
            client: The confluent-kafka client.
            record: The record about to be sent (carried by the error).
            timeout: Seconds for the metadata request.

        Raises:
            UnknownTopicError: The topic does not exist.
            AuthenticationError: The lookup failed and error_cb reported bad credentials.
            BrokerUnreachableError: The lookup failed and no broker was ever reached (the
                message names the bootstrap servers and the last connection error).
            KafkaClientError: The lookup failed otherwise (translated).
        """
        topic = record.topic
        context = f"send to {topic!r}: metadata lookup"
        try:
            with translating(context, record=record):
                meta = client.list_topics(topic=topic, timeout=timeout)
        except KafkaClientError as err:
            if isinstance(err, (BrokerUnreachableError, KafkaTimeoutError)):
                # librdkafka reports bad credentials as a transport failure of the lookup; the
                # reason comes through error_cb: serve it, and say it
                client.poll(0)
                auth = self.auth_failure
                if auth is not None:
                    raise AuthenticationError(
                        f"{context}: {auth.args[0].split(': ', 1)[-1]}",
                        kafka_error=auth.kafka_error,
                        record=record,
                    ) from err
                contact = self.contact
                if contact is not None and not contact.reached:
                    error = contact.unreachable(
                        context, f"the lookup waits metadata_timeout_s={timeout:g}"
                    )
                    error.record = record
                    raise error from err
            raise
        if self.contact is not None:
            self.contact.note_reached()
        info = meta.topics.get(topic)
        if info is None or (info.error is None and not info.partitions):
            raise UnknownTopicError(f"{context}: topic {topic!r} does not exist", record=record)
        if info.error is not None:
            raise from_kafka_error(info.error, context=context, record=record)


def config_error(exc: Exception) -> ConfigurationError:
    """Translate librdkafka's refusal of the client configuration (a bad key or value)."""
    text = exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else str(exc)
    return ConfigurationError(f"librdkafka refused the producer configuration: {text}")
