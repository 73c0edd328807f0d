"""The one consume engine of the SDK's front ends.

A :class:`ConsumeLoop` owns what every consuming front end has in common: the client (created
on first use, after the cluster check), polling, ``stop()`` and SIGTERM, the run's limits
(``max_records``, ``idle_timeout_s``), the records of the batch in hand, and closing. Where
the records come from is a :class:`Source`: a consumer group (:class:`GroupSource`: the
subscribed client, error events translated, the rebalance callbacks with assignment,
idleness, telemetry and counters, the KIP-848 preflight) or a share group (the queue's
``ShareSource``: acquired records, acknowledgements instead of offsets).

A front end holds one and supplies only what is its own (docs/architecture.md): what to do
with a batch (its run loop) and, through a :class:`Commits`, when and how a batch is committed
— the Consumer commits before handling (at_most_once) or stores after it (at_least_once), the
Processor commits a Kafka transaction, the database sink a database transaction, the queue
acknowledges.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Generic, Literal, Protocol, TypeVar

from confluent_kafka import TopicPartition

from sdk._client import ConsumerClient, KafkaMessage
from sdk._config import ClientConfig
from sdk._signals import sigterm_stops
from sdk.consumer._health import ClientHealth, poll_records, subscribed_client
from sdk.consumer._registry_wait import RegistryWaitStopped
from sdk.errors import ClosedError
from sdk.lifecycle import Lifecycle
from sdk.observability import Telemetry
from sdk.profiles import ConsumerProfile

__all__ = ["Commits", "ConsumeLoop", "GroupCommits", "GroupSource", "LoopCounts", "Source"]

Rebalance = Literal["assigned", "revoked", "lost"]


class _Closable(Protocol):
    def close(self) -> None: ...


C = TypeVar("C", bound=_Closable)
C_contra = TypeVar("C_contra", bound=_Closable, contravariant=True)


class LoopCounts(Protocol):
    """The counters a consumer group's source keeps (every group front end's stats)."""

    polled: int
    revoked: int
    lost: int

    def note(self, event: str, /) -> None:
        """Record an event line."""
        ...


class Source(Protocol[C]):
    """Where a front end's records come from: a consumer group, or a share group."""

    def connect(self, stopped: Callable[[], bool]) -> C | None:
        """The preflight checks, then the client created and subscribed.

        Returns None when ``stopped()`` became true while it waited for a broker.
        """
        ...

    def poll(self, client: C, limit: int, timeout_s: float) -> list[KafkaMessage]:
        """One poll: the records (counted as ``polled``), error events translated."""
        ...

    def idle_for(self, last_record: float) -> float:
        """Seconds without records that count towards ``idle_timeout_s``."""
        ...

    def raise_if_never_joined(self) -> None:
        """An idle run ends: raise why, if no broker was ever reached."""
        ...


class Commits(Protocol[C_contra]):
    """What a front end decides: when and how what it handled is committed."""

    def admit(self, client: C_contra, messages: list[KafkaMessage]) -> list[KafkaMessage]:
        """A polled batch, before any of it is handled: the records that may be handled."""
        ...

    def end_run(self, client: C_contra, failed: bool, in_flight: int) -> None:
        """A run ends (``failed``: by an exception): commit what it handled.

        ``in_flight``: records of the last batch admitted and not finished (never handled).
        """
        ...


class GroupCommits(Commits[ConsumerClient], Protocol):
    """A consumer-group front end's commits, with its part of each rebalance.

    The rebalance methods run inside the client's poll (librdkafka's rebalance callbacks);
    an exception they raise is re-raised by the source's next poll, after it returns.
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


class ConsumeLoop(Generic[C]):
    """The client of one front end, its polling, stop and limits.

    Args:
        source: Where the records come from (creates the client).
        commits: The front end's commit decisions around batches and at the end of a run.
        name: The front end's name, for messages (``"Consumer"``, ``"DatabaseSink"``, ...).
        batch_size: Most records one poll takes.
        poll_timeout_s: Longest wait of one poll; bounds how late :meth:`stop` is noticed.
        telemetry: The front end's spans and metrics; None: none.
        verify: ``(profile, topics)`` to check the cluster against before the first
            connection (:func:`sdk.doctor.verify`); None: no check.
    """

    def __init__(
        self,
        source: Source[C],
        commits: Commits[C],
        *,
        name: str,
        batch_size: int,
        poll_timeout_s: float,
        telemetry: Telemetry | None = None,
        verify: tuple[Any, Sequence[str]] | None = None,
    ) -> None:
        self.source = source
        self.commits = commits
        self.name = name
        self.batch_size = batch_size
        self.poll_timeout_s = poll_timeout_s
        self.telemetry = telemetry
        self.client: C | None = None
        self.state = Lifecycle.NEW
        self.in_flight = 0
        """Records of the batch in hand not yet finished (the front end counts them down)."""
        self._verify = verify
        self._stop = threading.Event()
        self.stopped: Callable[[], bool] = self._stop.is_set
        """Whether :meth:`stop` was asked for (cleared when a run ends)."""

    # ------------------------------------------------------------------ stop
    def stop(self) -> None:
        """Make the current (or next) run return soon; thread- and signal-safe."""
        self._stop.set()

    # ------------------------------------------------------------------ the client
    def open(self) -> C | None:
        """The client, created on first use (None: stopped while waiting for a broker).

        Raises:
            ClosedError: The front end is closed.
            DoctorError: The cluster check failed.
            ConfigurationError: librdkafka refused the configuration, or the broker lacks
                what the front end needs (the source's preflight).
        """
        if self.state is Lifecycle.CLOSED:
            raise ClosedError(f"this {self.name} is closed; create a new one")
        if self.client is not None:
            return self.client
        if self._verify is not None:
            from sdk.doctor import verify  # lazy: the admin client only when asked for

            verify(*self._verify)
            self._verify = None  # once per front end, not at every run
        client = self.source.connect(self.stopped)
        if client is None:
            return None
        self.client = client
        self.state = Lifecycle.OPEN
        return client

    def close(self, final: Callable[[C], None] | None = None) -> None:
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
    def running(self, handle_sigterm: bool | None) -> Iterator[C | None]:
        """A run: SIGTERM stops it if asked; on the way out the front end's ``end_run``.

        A :class:`RegistryWaitStopped` from the run (a stop during a wait for the schema
        registry) ends it as a stop does, for every front end.

        Yields the client, or None when the source was stopped before it subscribed (the run
        then has nothing to do, and nothing to commit).
        """
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
            except RegistryWaitStopped:
                # a stop came while a record waited for the schema registry: the run ends as
                # stopped, not as failed (that record was not handled: it is read again)
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
        before_poll: Callable[[C], None] | None = None,
        busy: Callable[[], bool] | None = None,
        room: Callable[[], int] | None = None,
        idle_yield: bool = False,
    ) -> Iterator[list[KafkaMessage]]:
        """Polled batches until stopped, ``max_records`` taken or ``idle_s`` without records.

        ``idle_yield``: a poll that found nothing yields an empty batch, so that the caller
        decides where the next poll runs and how long it waits (:attr:`poll_timeout_s` is
        read before each poll): ``sdk.aio`` polls without waiting on the event loop's thread
        and waits in its worker thread only when nothing is queued.

        Each batch went through the front end's :meth:`Commits.admit` (at_most_once: already
        committed); records it did not admit do not count towards ``max_records``.

        ``before_poll(client)`` runs before each poll; while ``busy()`` is true (records
        taken are still being handled) the run is not idle; ``room()`` caps how many records
        one poll takes (at least one).

        Nothing when the run has no client (:meth:`running` yielded None: stopped before the
        source subscribed): the run does not try to connect again.

        Raises:
            BrokerUnreachableError: ``idle_s`` passed without ever reaching a broker.
            KafkaClientError: See :meth:`Source.poll`.
        """
        client = self.client
        if client is None:
            return
        source, admit = self.source, self.commits.admit
        batch_size = self.batch_size
        taken = 0
        last = time.monotonic()
        while not self._stop.is_set():
            if before_poll is not None:
                before_poll(client)
            limit = batch_size if room is None else max(min(batch_size, room()), 1)
            if max_records is not None:
                limit = min(limit, max_records - taken)
                if limit <= 0:
                    return
            messages = source.poll(client, limit, self.poll_timeout_s)
            if not messages:
                if busy is not None and busy():
                    last = time.monotonic()
                elif idle_s is not None and source.idle_for(last) >= idle_s:
                    source.raise_if_never_joined()
                    return
                if idle_yield:
                    yield messages
                continue
            last = time.monotonic()
            messages = admit(client, messages)
            taken += len(messages)  # rewound or redelivered: not handed out
            if not messages:
                continue
            self.in_flight = len(messages)
            yield messages
            # let go of this batch before the next poll allocates the next one: kept alive
            # through it, a large batch gets promoted to the old generations of the garbage
            # collector, which then walks it again and again
            del messages

    def observed(self) -> Telemetry | None:
        """The telemetry, if it records anything now (checked once per batch)."""
        tel = self.telemetry
        if tel is not None and (tel.tracing_enabled() or tel.metrics_enabled()):
            return tel
        return None


class GroupSource:
    """A consumer group's records: the subscribed client, its health, its rebalances.

    Args:
        profile: The consumer profile (``render()`` gives the client's configuration).
        topics: Topics to subscribe to.
        stats: The front end's counters (``revoked``, ``lost``, ``note``).
        commits: The front end's part of each rebalance.
        client_factory: Builds the client from the rendered config (None:
            ``confluent_kafka.Consumer``).
        telemetry: Rebalance metrics; None: none.
        configure: Called with the rendered config before the client is created (after the
            checks): may add to it, or prepare what the front end needs first.
        ready: Called with the new client before it subscribes; False (stopped while it
            waited): not subscribed, the client closed, and :meth:`connect` returns None.
    """

    def __init__(
        self,
        profile: ConsumerProfile,
        topics: Sequence[str],
        stats: LoopCounts,
        commits: GroupCommits,
        *,
        client_factory: Callable[[ClientConfig], ConsumerClient] | None = None,
        telemetry: Telemetry | None = None,
        configure: Callable[[ClientConfig], None] | None = None,
        ready: Callable[[ConsumerClient], bool] | None = None,
    ) -> None:
        self.profile = profile
        self.topics = list(topics)
        self.stats = stats
        self.commits = commits
        self.telemetry = telemetry
        self.health = ClientHealth(stats)
        self._factory = client_factory
        self._configure = configure
        self._ready = ready
        self._assigned: set[tuple[str, int]] = set()
        self._callback_error: BaseException | None = None

    @property
    def assignment(self) -> list[tuple[str, int]]:
        """The ``(topic, partition)`` pairs this member owns now, sorted (thread-safe read)."""
        return sorted(set(self._assigned))

    def connect(self, stopped: Callable[[], bool]) -> ConsumerClient | None:
        """The subscribed client; first, for ``group_protocol="consumer"``, KIP-848 support.

        A broker without it would refuse the heartbeats forever: refused here, at start.

        Raises:
            ConfigurationError: librdkafka refused the configuration, or the broker lacks
                the consumer group protocol.
        """
        if self.profile.group_protocol == "consumer":
            from sdk.doctor import CONSUMER_PROTOCOL, require_broker

            require_broker(
                CONSUMER_PROTOCOL,
                self.profile.bootstrap_servers,
                self.profile.security,
                self.profile.extras,
            )
        config: ClientConfig = dict(self.profile.render())
        if self._configure is not None:
            self._configure(config)
        return subscribed_client(
            self._factory, config, self.topics, self.health, self, ready=self._ready
        )

    def poll(self, client: ConsumerClient, limit: int, timeout_s: float) -> list[KafkaMessage]:
        """One poll: the records, error events translated, a rebalance callback's error raised.

        Raises:
            BrokerUnreachableError: No broker answered since the client started.
            KafkaClientError: A fatal client error, an unknown topic or a missing ACL.
        """
        self._raise_callback_error()
        messages = poll_records(client, limit, timeout_s, self.health, self.stats, self.topics)
        self._raise_callback_error()
        self.stats.polled += len(messages)
        return messages

    def idle_for(self, last_record: float) -> float:
        """Seconds without records since partitions were assigned (0 while joining)."""
        return self.health.idle_for(last_record)

    def raise_if_never_joined(self) -> None:
        """If no broker was ever reached, say why instead of returning."""
        self.health.raise_if_never_joined()

    def _raise_callback_error(self) -> None:
        if self._callback_error is not None:
            error, self._callback_error = self._callback_error, None
            raise error

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
        except BaseException as exc:  # raised by the next poll, once the client returns
            if self._callback_error is None:
                self._callback_error = exc
