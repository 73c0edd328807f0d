"""The one consume engine of the consumer-group front ends.

A :class:`ConsumeLoop` owns what every front end that reads through a consumer group has in
common: the subscribed client (created on first use, after the cluster check and the broker
preflight), polling with error events translated, the rebalance callbacks (assignment,
idleness, telemetry, counters, an error raised in a callback re-raised by the next poll),
``stop()`` and SIGTERM, the run's limits (``max_records``, ``idle_timeout_s``) and closing.

A front end holds one and supplies only what is its own (docs/architecture.md): what to do
with a batch (its run loop) and, through a :class:`Commits`, when and how a batch is committed
— the Consumer commits before handling (at_most_once) or stores after it (at_least_once), the
Processor commits a Kafka transaction, the database sink a database transaction.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Literal, Protocol

from confluent_kafka import TopicPartition

from sdk._client import ConsumerClient, KafkaMessage
from sdk.consumer._health import ClientHealth, poll_records, subscribed_client
from sdk.errors import ClosedError
from sdk.lifecycle import Lifecycle
from sdk.observability import Telemetry
from sdk.profiles import ConsumerProfile

__all__ = ["Commits", "ConsumeLoop", "LoopCounts"]

Rebalance = Literal["assigned", "revoked", "lost"]


class LoopCounts(Protocol):
    """The counters the engine keeps (every front end's stats has them)."""

    polled: int
    revoked: int
    lost: int

    def note(self, event: str, /) -> None:
        """Record an event line."""
        ...


class Commits(Protocol):
    """What a front end decides: when and how what it handled is committed.

    The rebalance methods run inside the client's poll (librdkafka's rebalance callbacks);
    an exception they raise is re-raised by :meth:`ConsumeLoop.poll` after it returns.
    """

    def on_assign(self, client: ConsumerClient, partitions: list[TopicPartition]) -> None:
        """Partitions were assigned to this member."""
        ...

    def on_revoke(self, client: ConsumerClient, partitions: list[TopicPartition]) -> None:
        """Partitions go to another member: commit (or give back) what was handled of them."""
        ...

    def on_lost(self, client: ConsumerClient, partitions: list[TopicPartition]) -> None:
        """The group session was lost: the partitions may be another member's already."""
        ...

    def admit(self, client: ConsumerClient, messages: list[KafkaMessage]) -> list[KafkaMessage]:
        """A polled batch, before any of it is handled: the records that may be handled."""
        ...

    def end_run(self, client: ConsumerClient, failed: bool, in_flight: int) -> None:
        """A run ends (``failed``: by an exception): commit what it handled.

        ``in_flight``: records of the last batch admitted and not finished (never handled).
        """
        ...


class ConsumeLoop:
    """The subscribed client and its polling, rebalances, stop and limits, for one front end.

    Args:
        profile: The consumer profile (``render()`` gives the client's configuration).
        topics: Topics to subscribe to.
        stats: The front end's counters (``polled``, ``revoked``, ``lost``, ``note``).
        commits: The front end's commit decisions, called at rebalances and around batches.
        name: The front end's name, for messages (``"Consumer"``, ``"DatabaseSink"``, ...).
        poll_timeout_s: Longest wait of one poll; bounds how late :meth:`stop` is noticed.
        client_factory: Builds the client from the rendered config (None:
            ``confluent_kafka.Consumer``).
        telemetry: Rebalance metrics (and the front end's spans); None: none.
        verify_cluster: Check the cluster against ``verify_profile`` before the first
            connection (:func:`sdk.doctor.verify`).
        verify_profile: The profile the check reads (default ``profile``; the Processor's is
            its processing profile).
        configure: Called with the rendered config before the client is created (after the
            checks): may add to it, or prepare what the front end needs first.
        ready: Called with the new client before it subscribes; False (stopped while it
            waited): not subscribed, the client closed, and :meth:`open` returns None.
    """

    def __init__(
        self,
        profile: ConsumerProfile,
        topics: Sequence[str],
        stats: LoopCounts,
        commits: Commits,
        *,
        name: str,
        poll_timeout_s: float,
        client_factory: Callable[[dict[str, Any]], ConsumerClient] | None = None,
        telemetry: Telemetry | None = None,
        verify_cluster: bool = False,
        verify_profile: object = None,
        configure: Callable[[dict[str, Any]], None] | None = None,
        ready: Callable[[ConsumerClient], bool] | None = None,
    ) -> None:
        self.profile = profile
        self.topics = list(topics)
        self.stats = stats
        self.commits = commits
        self.name = name
        self.poll_timeout_s = poll_timeout_s
        self.telemetry = telemetry
        self.health = ClientHealth(stats)
        self.client: ConsumerClient | None = None
        self.state = Lifecycle.NEW
        self.in_flight = 0
        """Records of the batch in hand not yet finished (the front end counts them down)."""
        self._factory = client_factory
        self._configure = configure
        self._ready = ready
        self._stop = threading.Event()
        self.stopped: Callable[[], bool] = self._stop.is_set
        """Whether :meth:`stop` was asked for (cleared when a run ends)."""
        self._assigned: set[tuple[str, int]] = set()
        self._callback_error: BaseException | None = None
        self._verify = verify_profile if verify_cluster else None
        if verify_cluster and verify_profile is None:
            self._verify = profile

    # ------------------------------------------------------------------ stop
    def stop(self) -> None:
        """Make the current (or next) run return soon; thread- and signal-safe."""
        self._stop.set()

    @property
    def assignment(self) -> list[tuple[str, int]]:
        """The ``(topic, partition)`` pairs this member owns now, sorted (thread-safe read)."""
        return sorted(set(self._assigned))

    # ------------------------------------------------------------------ the client
    def open(self) -> ConsumerClient | None:
        """The subscribed client, created on first use (None: ``ready`` said stop).

        First the cluster check (if asked for) and, for ``group_protocol="consumer"``, the
        broker's support of KIP-848 (a broker without it refuses the heartbeats forever).

        Raises:
            ClosedError: The front end is closed.
            DoctorError: The cluster check failed.
            ConfigurationError: librdkafka refused the configuration, or the broker lacks
                the consumer group protocol.
        """
        if self.state is Lifecycle.CLOSED:
            raise ClosedError(f"this {self.name} is closed; create a new one")
        if self.client is not None:
            return self.client
        if self._verify is not None:
            from sdk.doctor import verify  # lazy: the admin client only when asked for

            verify(self._verify, self.topics)  # type: ignore[arg-type]
            self._verify = None  # once per front end, not at every run
        if self.profile.group_protocol == "consumer":
            from sdk.doctor import CONSUMER_PROTOCOL, require_broker

            require_broker(
                CONSUMER_PROTOCOL,
                self.profile.bootstrap_servers,
                self.profile.security,
                self.profile.extras,
            )
        config = dict(self.profile.render())
        if self._configure is not None:
            self._configure(config)
        client = subscribed_client(
            self._factory, config, self.topics, self.health, self, ready=self._ready
        )
        if client is None:
            return None
        self.client = client
        self.state = Lifecycle.OPEN
        return client

    def close(self, final: Callable[[ConsumerClient], None] | None = None) -> None:
        """Stop, run ``final(client)`` (the front end's last commit), close the client.

        Idempotent. The client is closed (leaving the group) even when ``final`` raises.
        """
        if self.state is Lifecycle.CLOSED:
            return
        self._stop.set()
        client, self.client = self.client, None
        self.state = Lifecycle.CLOSED
        if client is None:
            return
        try:
            if final is not None:
                final(client)
        finally:
            with suppress(Exception):
                client.close()

    # ------------------------------------------------------------------ a run
    @contextmanager
    def running(self, handle_sigterm: bool | None) -> Iterator[ConsumerClient | None]:
        """A run: SIGTERM stops it if asked; on the way out the front end's ``end_run``.

        Yields the subscribed client, or None when ``ready`` stopped it before it subscribed
        (the run then has nothing to do, and nothing to commit).
        """
        from sdk._signals import sigterm_stops

        with sigterm_stops(self.stop, handle_sigterm):
            client = self.open()
            if client is None:
                self._stop.clear()
                yield None
                return
            failed = True
            try:
                yield client
                failed = False
            finally:
                self._stop.clear()
                in_flight, self.in_flight = self.in_flight, 0
                self.commits.end_run(client, failed, in_flight)

    def batches(
        self,
        max_records: int | None,
        idle_s: float | None,
        *,
        before_poll: Callable[[ConsumerClient], None] | None = None,
    ) -> Iterator[list[KafkaMessage]]:
        """Polled batches until stopped, ``max_records`` taken or ``idle_s`` without records.

        Each batch went through the front end's :meth:`Commits.admit` (at_most_once: already
        committed); records it did not admit do not count towards ``max_records``.

        Raises:
            BrokerUnreachableError: ``idle_s`` passed without ever reaching a broker.
            KafkaClientError: See :meth:`poll`.
        """
        client = self.open()
        if client is None:
            return
        admit = self.commits.admit
        limit_of = self.profile.batch_size
        taken = 0
        last = time.monotonic()
        while not self._stop.is_set():
            if before_poll is not None:
                before_poll(client)
            limit = limit_of
            if max_records is not None:
                limit = min(limit, max_records - taken)
                if limit <= 0:
                    return
            messages = self.poll(client, limit, self.poll_timeout_s)
            if not messages:
                if idle_s is not None and self.health.idle_for(last) >= idle_s:
                    self.health.raise_if_never_joined()
                    return
                continue
            last = time.monotonic()
            polled = len(messages)
            self.stats.polled += polled
            messages = admit(client, messages)
            taken += len(messages)  # rewound or redelivered: not handed out
            if not messages:
                continue
            self.in_flight = len(messages)
            yield messages

    def poll(self, client: ConsumerClient, limit: int, timeout_s: float) -> list[KafkaMessage]:
        """One poll: the records, error events translated, a rebalance callback's error raised.

        Raises:
            BrokerUnreachableError: No broker answered since the client started.
            KafkaClientError: A fatal client error, an unknown topic or a missing ACL.
        """
        self.raise_callback_error()
        messages = poll_records(client, limit, timeout_s, self.health, self.stats, self.topics)
        self.raise_callback_error()
        return messages

    def fail_later(self, error: BaseException) -> None:
        """A rebalance callback failed: the next :meth:`poll` raises ``error`` (first one kept)."""
        if self._callback_error is None:
            self._callback_error = error

    def raise_callback_error(self) -> None:
        """Raise (once) the error a rebalance callback left."""
        if self._callback_error is not None:
            error, self._callback_error = self._callback_error, None
            raise error

    def observed(self) -> Telemetry | None:
        """The telemetry, if it records anything now (checked once per batch)."""
        tel = self.telemetry
        if tel is not None and (tel.tracing_enabled() or tel.metrics_enabled()):
            return tel
        return None

    # ------------------------------------------------------------------ rebalance callbacks
    def _on_assign(self, client: ConsumerClient, partitions: list[TopicPartition]) -> None:
        self.health.assigned()  # idle_timeout_s counts from here
        self._assigned |= {(tp.topic, tp.partition) for tp in partitions}
        self._rebalanced("assigned", partitions, self.commits.on_assign, client)

    def _on_revoke(self, client: ConsumerClient, partitions: list[TopicPartition]) -> None:
        self.stats.revoked += 1
        self._rebalanced("revoked", partitions, self.commits.on_revoke, client)
        self._assigned -= {(tp.topic, tp.partition) for tp in partitions}

    def _on_lost(self, client: ConsumerClient, partitions: list[TopicPartition]) -> None:
        self.stats.lost += 1
        self._rebalanced("lost", partitions, self.commits.on_lost, client)
        self._assigned -= {(tp.topic, tp.partition) for tp in partitions}

    def _rebalanced(
        self,
        kind: Rebalance,
        partitions: list[TopicPartition],
        step: Callable[[ConsumerClient, list[TopicPartition]], None],
        client: ConsumerClient,
    ) -> None:
        if self.telemetry is not None:
            self.telemetry.rebalance(kind, len(partitions))
        try:
            step(client, partitions)
        except BaseException as exc:  # raised by the loop once the poll returns
            self.fail_later(exc)
