"""What the Consumer knows about its connection: client errors, joins, and idleness."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Protocol

from confluent_kafka import KafkaError, TopicPartition

from sdk._client import ConsumerClient, KafkaMessage, call_kafka, consume_ready
from sdk._config import ClientConfig
from sdk._connection import BrokerContact
from sdk.errors import (
    AuthenticationError,
    AuthorizationError,
    BrokerUnreachableError,
    ConfigurationError,
    KafkaClientError,
    UnknownTopicError,
    from_kafka_error,
)

_log = logging.getLogger("sdk.consumer")

__all__ = ["ClientHealth", "poll_records", "subscribed_client"]


class EventNotes(Protocol):
    """Where non-fatal client errors are noted (every front end's stats)."""

    def note(self, event: str, /) -> None:
        """Record an event line."""
        ...


class ClientHealth:
    """The consumer client's ``error_cb``, and when an idle run may end.

    ``idle_timeout_s`` counts from the latest partition assignment: a slow group join (a
    coordinator loading ``__consumer_offsets``) is not idleness. Before the first assignment it
    bounds only the wait for a broker that does not answer or refuses the credentials; the
    run then raises that error instead of returning as if there were no records.

    Without ``idle_timeout_s`` a client that has reached no broker at all since it started
    raises :class:`BrokerUnreachableError` after ``socket.connection.setup.timeout.ms``
    (:class:`~sdk._connection.BrokerContact`, set by :func:`subscribed_client`).

    Args:
        stats: The consumer's counters (non-fatal client errors are noted there).
    """

    def __init__(self, stats: EventNotes) -> None:
        self._stats = stats
        self.assigned_at: float | None = None
        self._last_error: KafkaClientError | None = None
        self._auth_failure: AuthenticationError | None = None
        self._fatal: BaseException | None = None
        self.contact: BrokerContact | None = None

    def on_error(self, kafka_error: KafkaError) -> None:
        """The client's ``error_cb``: remember the error; a fatal one is raised by the loop."""
        if self.contact is not None:
            self.contact.on_error(kafka_error)  # a connection error is logged there, collapsed
        error = from_kafka_error(kafka_error, context="consumer")
        self._last_error = error
        if isinstance(error, AuthenticationError):
            self._auth_failure = error  # kept: transport errors that follow would hide it
        if kafka_error.fatal():
            self._fatal = error
        else:
            self._stats.note(str(error))

    def raise_fatal(self) -> None:
        """Raise (once) the fatal error a callback reported, if any."""
        if self._fatal is not None:
            error, self._fatal = self._fatal, None
            raise error

    def assigned(self) -> None:
        """Partitions were assigned: idleness counts from now."""
        self.assigned_at = time.monotonic()
        if self.contact is not None:
            self.contact.note_reached()

    def idle_for(self, last_record: float) -> float:
        """Seconds without records since partitions were assigned (0 while joining)."""
        now = time.monotonic()
        if self.assigned_at is None:
            error = self._last_error
            if isinstance(error, (BrokerUnreachableError, AuthenticationError)):
                return now - last_record  # idle_timeout_s bounds the wait for a broker ...
            return 0.0  # ... but a slow group join (coordinator loading) is not idleness
        return now - max(last_record, self.assigned_at)

    def raise_if_never_joined(self) -> None:
        """An idle run ends: if no broker was ever reached, say why instead of returning.

        Raises:
            AuthenticationError: The broker refused the credentials.
            KafkaClientError: No broker answered (BrokerUnreachableError) or another error.
        """
        if self.assigned_at is None and self._last_error is not None:
            if self._auth_failure is not None:
                raise self._auth_failure
            contact = self.contact
            unreachable = isinstance(self._last_error, BrokerUnreachableError)
            if unreachable and contact is not None and not contact.reached:
                raise contact.unreachable("consume", "idle_timeout_s ended the wait")
            raise self._last_error


def poll_records(
    client: ConsumerClient,
    limit: int,
    timeout_s: float,
    health: ClientHealth,
    stats: EventNotes,
    topics: Sequence[str],
) -> list[KafkaMessage]:
    """One ``consume()``: the records, with error events translated (every consuming front end).

    Partition EOF events are skipped; other non-fatal events are noted and logged.

    Raises:
        BrokerUnreachableError: No broker answered since the client started, for
            ``socket.connection.setup.timeout.ms``.
        KafkaClientError: A fatal client error, an unknown topic or a missing ACL (nothing of
            the batch was handled or committed).
    """
    from confluent_kafka import KafkaError

    messages = call_kafka(lambda: consume_ready(client, limit, timeout_s), context="consume")
    health.raise_fatal()
    contact = health.contact
    if contact is not None and not contact.reached:  # until the first contact: one check
        if messages:
            contact.note_reached()
        else:
            contact.check(
                lambda t: client.list_topics(timeout=t), f"consume from {', '.join(topics)}"
            )
    out = [message for message in messages if message.error() is None]
    if len(out) == len(messages):
        return out  # the common case: no event in the batch
    for message in messages:
        err = message.error()
        if err is None:
            continue
        if err.code() == KafkaError._PARTITION_EOF:
            continue
        where = message.topic() or ", ".join(topics)
        error = from_kafka_error(err, context=f"consume from {where}")
        if err.fatal() or isinstance(error, UnknownTopicError | AuthorizationError):
            raise error
        stats.note(str(error))
        _log.warning("%s", error)
    return out


class RebalanceHandlers(Protocol):
    """A front end's rebalance callbacks, each ``(consumer, partitions)``."""

    def _on_assign(self, consumer: ConsumerClient, partitions: list[TopicPartition]) -> None: ...

    def _on_revoke(self, consumer: ConsumerClient, partitions: list[TopicPartition]) -> None: ...

    def _on_lost(self, consumer: ConsumerClient, partitions: list[TopicPartition]) -> None: ...


def subscribed_client(
    factory: Callable[[ClientConfig], ConsumerClient] | None,
    config: ClientConfig,
    topics: Sequence[str],
    health: ClientHealth,
    callbacks: RebalanceHandlers,
    *,
    ready: Callable[[ConsumerClient], bool] | None = None,
) -> ConsumerClient | None:
    """Create the consumer client (``confluent_kafka.Consumer`` by default) and subscribe.

    Args:
        factory: Builds the client from the config; None: ``confluent_kafka.Consumer``.
        config: The rendered librdkafka configuration (``error_cb`` and ``logger`` are added:
            librdkafka's log goes to ``sdk.librdkafka``, repeats collapsed).
        topics: Topics to subscribe to.
        health: Receives the client's error events.
        callbacks: Has ``_on_assign``, ``_on_revoke`` and ``_on_lost`` (the engine).
        ready: Called with the new client before it subscribes; False (stopped while it
            waited): the client is closed and None returned.

    Raises:
        ConfigurationError: librdkafka refused the configuration.
    """
    if factory is None:
        from confluent_kafka import Consumer as _Client

        factory = _Client
    health.contact = BrokerContact(config)
    config["error_cb"] = health.on_error
    config["logger"] = health.contact
    try:
        client = factory(config)
    except Exception as exc:  # KafkaException for a bad librdkafka key/value
        raise ConfigurationError(f"librdkafka refused the consumer configuration: {exc}") from exc
    if ready is not None and not ready(client):
        with suppress(Exception):
            client.close()
        return None
    client.subscribe(
        list(topics),
        on_assign=callbacks._on_assign,
        on_revoke=callbacks._on_revoke,
        on_lost=callbacks._on_lost,
    )
    return client
