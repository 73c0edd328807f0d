"""The queue consumer: a share group (KIP-932) consumed with the SDK's guarantees.

Each record a share group hands out is *acquired* by one member under a lock; the guarantee
decides when the SDK acknowledges it (the state machine is drawn in docs/queues.md):

* ``at_most_once``: every record of a poll is acknowledged ACCEPT and the acknowledgements are
  committed (``commit_sync``) before any handler runs; records whose acknowledgement the broker
  refused are not handled. The handler's failures are retried in process (the policy's
  attempts and backoff), then dead-lettered or raised: the record is never delivered again.
* ``at_least_once``: ACCEPT after the handler succeeded; after a retryable failure RELEASE,
  so the broker delivers it again (maybe to another member; ``record.delivery_count`` grows)
  until the policy's ``attempts`` deliveries; then REJECT, after the record was written to the
  dead-letter topic when there is one. A dead-letter write that fails releases the record
  instead of rejecting it, and the run raises. A crash before the acknowledgement leaves the
  record to its lock's expiry: delivered again, never lost.

Acknowledgements are sent with the next poll (and committed synchronously when a run ends).
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from operator import countOf
from typing import Any, Literal, TypeVar, cast

from confluent_kafka import KafkaError, KafkaException, Message, TopicPartition

from sdk._client import KafkaMessage, ShareConsumerClient, share_consumer, translating
from sdk._connection import BrokerContact
from sdk._deprecation import renamed
from sdk._signals import sigterm_stops
from sdk.consumer.engine import RecordDecoder, dead_letter_sink
from sdk.doctor import SHARE_GROUPS, require_broker
from sdk.errors import (
    ClosedError,
    ConfigurationError,
    KafkaClientError,
    SdkError,
    SerializationError,
    from_kafka_error,
)
from sdk.failure import HandlerRunner
from sdk.observability import Telemetry
from sdk.profiles import Guarantee, QueueProfile
from sdk.queue._at_least_once import LOCK_BUDGET, AtLeastOnceHandling
from sdk.queue._at_most_once import AtMostOnceHandling
from sdk.queue._client_api import AcknowledgeType, delivery_count
from sdk.queue._group import NO_SUPPORT_CODES, apply_group_config, with_hint
from sdk.queue._manual import ManualAcknowledgement
from sdk.queue._records import Outstanding, QueueStats
from sdk.records import ConsumerRecord
from sdk.serialization import Deserializer

__all__ = ["QueueConsumer"]

T = TypeVar("T")

_AMO = Guarantee.AT_MOST_ONCE
# confluent-kafka's C methods, mapped over a poll with no Python frame per record; the messages
# are confluent_kafka.Message, typed by what the SDK reads of them (delivery_count: a stand-in
# on a client older than the queue's floor, which cannot run a queue anyway)
_delivery_count = cast("Callable[[KafkaMessage], int | None]", delivery_count)
_error = cast("Callable[[KafkaMessage], KafkaError | None]", Message.error)
_ACCEPT, _RELEASE, _REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT
_COMMIT_TIMEOUT_S = 30.0


class QueueConsumer(AtLeastOnceHandling, AtMostOnceHandling, ManualAcknowledgement):
    """Consume a queue (share group) with a handler per record or per poll.

    Several processes (or threads, one consumer each) with the same ``group_id`` share the
    records of the topics, whatever their partition count: each record goes to one of them.

    Args:
        profile: The queue profile (guarantee, group, failure policy, group configs).
        topics: Topics to consume.
        key_deserializer: Name (``bytes``, ``str``, ``json``, ...) or callable.
        value_deserializer: Name or callable.
        dead_letter_producer_config: Extra librdkafka keys for the dead-letter producer.
        telemetry: OpenTelemetry hooks (default: the process-wide one; False: none).
        consumer_factory: Makes the share consumer from a librdkafka dict (tests).
        verify_cluster: Before the first connection, check the cluster against the profile
            (:func:`sdk.doctor.verify`: share groups on, the group's configs, the topics) and
            refuse to start on a FAIL.

    Raises:
        ConfigurationError: No topics, an unknown deserializer or retry_on type, or a DLQ
            producer config without a DLQ topic.
    """

    def __init__(
        self,
        profile: QueueProfile,
        topics: Sequence[str],
        *,
        key_deserializer: str | Deserializer = "bytes",
        value_deserializer: str | Deserializer = "bytes",
        dead_letter_producer_config: Mapping[str, Any] | None = None,
        telemetry: Telemetry | Literal[False] | None = None,
        consumer_factory: Callable[[dict[str, Any]], ShareConsumerClient] = share_consumer,
        verify_cluster: bool = False,
    ) -> None:
        if isinstance(topics, str) or not topics or not all(topics):
            raise ConfigurationError("topics: give a non-empty list of topic names", field="topics")
        self.profile = profile
        self.topics = list(topics)
        self.guarantee = profile.guarantee
        self.stats = QueueStats()
        self._decoder = RecordDecoder(key_deserializer, value_deserializer)
        self._runner = HandlerRunner(profile.failure, on_retry=self._count_retry)
        self._dlq = dead_letter_sink(profile, dead_letter_producer_config)
        self._tel: Telemetry | None = (
            None if telemetry is False else (telemetry or Telemetry.default())
        )
        self._factory = consumer_factory
        self._verify_cluster = verify_cluster
        self._lock_ms = profile.record_lock_duration_ms or 30_000
        self._client: ShareConsumerClient | None = None
        self._contact: BrokerContact | None = None
        self._closed = False
        self._stop = threading.Event()
        self._polled_at = 0.0
        # the lock budget never releases a record on its broker's last delivery but one: the
        # broker archives a record at the delivery count limit, and a loss is worse than a
        # duplicate at_least_once
        self._spare = (profile.delivery_count_limit or 5) - 1

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> QueueConsumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stop(self) -> None:
        """Ask a running :meth:`run` to return after the record in hand (thread/signal-safe)."""
        self._stop.set()

    def close(self) -> None:
        """Commit pending acknowledgements, leave the group and release the consumer."""
        if self._closed:
            return
        self._closed = True
        client, self._client = self._client, None
        try:
            if client is not None:
                with contextlib.suppress(Exception):
                    client.commit_sync(_COMMIT_TIMEOUT_S)
                client.close()
        finally:
            if self._dlq is not None:
                self._dlq.close()

    def _open(self) -> ShareConsumerClient | None:
        if self._closed:
            raise ClosedError("QueueConsumer used after close()")
        if self._client is None:
            if self._verify_cluster:
                from sdk.doctor import verify  # lazy: the admin client only when asked for

                verify(self.profile, self.topics)
                self._verify_cluster = False  # once per consumer, not at every run
            if self._factory is share_consumer:  # a broker without share groups: say so now
                require_broker(
                    SHARE_GROUPS,
                    self.profile.bootstrap_servers,
                    self.profile.security,
                    self.profile.extras,
                )
            if self.profile.apply_group_config:
                applied = apply_group_config(self.profile, stopped=self._stop.is_set)
                if applied is None:
                    return None  # stopped (Ctrl-C) before a broker answered
                self.stats.note(f"group {self.profile.group_id!r} configs set: {applied}")
            config: dict[str, Any] = dict(self.profile.render())
            self._contact = BrokerContact(config)
            config["logger"] = self._contact  # librdkafka's log, repeats collapsed
            config["error_cb"] = self._contact.on_error
            if self.profile.apply_group_config:
                self._contact.note_reached()  # the admin client reached the cluster
            try:
                client = self._factory(config)
            except Exception as exc:  # KafkaException for a bad librdkafka key/value
                raise ConfigurationError(
                    f"librdkafka refused the share consumer configuration: {exc}"
                ) from exc
            client.set_acknowledgement_commit_callback(self._on_ack_commit)
            client.subscribe(self.topics)
            self._client = client
        return self._client

    # ------------------------------------------------------------------ running
    def run(
        self,
        handler: Callable[[ConsumerRecord], object],
        *,
        max_records: int | None = None,
        idle_timeout_s: float | None = None,
        handle_sigterm: bool | None = None,
        idle_timeout: float | None = None,
    ) -> QueueStats:
        """Call ``handler(record)`` per record until stopped; acknowledge per the guarantee.

        Args:
            handler: Called once per delivery of a record (its result is ignored).
            max_records: Return after acquiring this many records.
            idle_timeout_s: Return after this many seconds without a record.
            handle_sigterm: SIGTERM calls :meth:`stop` while running. None (default): in the
                main thread, unless the application has its own SIGTERM handler; True: always
                (main thread only); False: never.
            idle_timeout: Deprecated name of ``idle_timeout_s``.

        Returns:
            The counters (cumulative over runs).

        Raises:
            ClosedError: The consumer is closed.
            HandlerError: The policy gave up with ``on_failure="stop"`` (the record was
                released at_least_once).
            SerializationError: A record that cannot be deserialized, with ``on_failure="stop"``.
            KafkaClientError: A dead-letter write failed (the record was released), the
                broker has no share groups (the message says what is needed), or a fatal
                client error.
            ConfigurationError: ``handle_sigterm=True`` outside the main thread.
            DoctorError: ``verify_cluster=True`` and a check of the cluster failed.
        """
        idle_s = renamed(
            "QueueConsumer.run", "idle_timeout", idle_timeout, "idle_timeout_s", idle_timeout_s
        )
        return self._run(handler, False, max_records, idle_s, handle_sigterm)

    def run_batch(
        self,
        handler: Callable[[list[ConsumerRecord]], object],
        *,
        max_records: int | None = None,
        idle_timeout_s: float | None = None,
        handle_sigterm: bool | None = None,
        idle_timeout: float | None = None,
    ) -> QueueStats:
        """Like :meth:`run`, but ``handler(records)`` gets each poll's records at once.

        A failing batch is released whole while its records have deliveries left, then
        each record is dead-lettered and rejected (or the run stops).

        Raises:
            ClosedError: See :meth:`run`.
            HandlerError: See :meth:`run`.
            SerializationError: See :meth:`run`.
            KafkaClientError: See :meth:`run`.
            ConfigurationError: See :meth:`run`.
        """
        idle_s = renamed(
            "QueueConsumer.run_batch",
            "idle_timeout",
            idle_timeout,
            "idle_timeout_s",
            idle_timeout_s,
        )
        return self._run(handler, True, max_records, idle_s, handle_sigterm)

    def _run(
        self,
        handler: Callable[[Any], object],
        batch: bool,
        max_records: int | None,
        idle_s: float | None,
        handle_sigterm: bool | None,
    ) -> QueueStats:
        with sigterm_stops(self.stop, handle_sigterm), self._running() as client:
            taken, last = 0, time.monotonic()
            while client is not None and not self._stop.is_set():
                if max_records is not None and taken >= max_records:
                    break
                if idle_s is not None and time.monotonic() - last >= idle_s:
                    break
                messages = self._poll(client)
                if not messages:
                    continue
                taken, last = taken + len(messages), time.monotonic()
                self._handle(client, handler, messages, batch)
                # let go of this poll's records before the next poll allocates thousands more:
                # kept alive through it, they were promoted to the old generations by the
                # collections its allocations set off, and the garbage collector then walked
                # them again and again
                del messages
        return self.stats

    @contextmanager
    def _running(self) -> Iterator[ShareConsumerClient | None]:
        """The open client (None: stopped before a broker answered; the run returns)."""
        client = self._open()
        if client is None:
            self._stop.clear()
            yield None
            return
        self._stop.clear()
        try:
            yield client
        finally:
            self._stop.clear()
            try:  # the last poll's acknowledgements, confirmed before run() returns
                self._commit(client, "commit of the acknowledgements at the end of the run")
            except SdkError as exc:
                self.stats.note(f"{exc}", logging.WARNING)

    def _poll(self, client: ShareConsumerClient) -> list[KafkaMessage]:
        polled = _seam(lambda: client.poll(self.profile.poll_timeout_ms / 1000.0), "poll")
        contact = self._contact
        if contact is not None and not contact.reached:  # until the first contact
            if polled:
                contact.note_reached()
            else:  # no metadata call on a share consumer: its connection errors decide
                contact.check(None, f"share-group poll of {', '.join(self.topics)}")
        # confluent-kafka 2.16 returns Messages, a read-only sequence over a list, whose
        # records() copies that list. What follows wants a list (handle_run indexes it)
        messages = polled if type(polled) is list else _as_list(polled)
        # each message's error from C (map, no list): a poll without errors is kept as it is,
        # with no Python bytecode per record (a list comprehension would run some per record);
        # any(), not a count of None: KafkaError's == raises when compared with None
        if not any(map(_error, messages)):
            out: list[KafkaMessage] = messages
        else:
            out = []
            for m in messages:
                err = m.error()
                if err is None:
                    out.append(m)
                    continue
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                error = from_kafka_error(err, context=f"share-group poll of {m.topic()}")
                if err.code() in NO_SUPPORT_CODES:
                    raise with_hint(error)
                if err.fatal():
                    raise error
                self.stats.note(str(error), logging.WARNING)
        self._polled_at = time.monotonic()  # the poll's records were acquired about now
        self.stats.polled += len(out)
        # C-level, no list: no Python frame per record
        redelivered = len(out) - countOf(map(_delivery_count, out), 1)
        if redelivered:  # a first delivery may also read None or 0 (no count known)
            counts = list(map(_delivery_count, out))
            redelivered -= counts.count(None) + counts.count(0)
        self.stats.redelivered += redelivered
        return out

    def _handle(
        self,
        client: ShareConsumerClient,
        handler: Callable[[Any], object],
        msgs: list[KafkaMessage],
        batch: bool,
    ) -> None:
        """Handle one poll's records; every one of them leaves acknowledged, even on error."""
        pending = Outstanding(len(msgs))  # not yet acknowledged, by index
        ack = self._acker(client, msgs, pending)
        try:
            if self.guarantee is _AMO:
                self._handle_at_most_once(client, handler, msgs, pending, batch)
            elif batch:
                self._batch_at_least_once(handler, msgs, ack)
            else:
                self._each_at_least_once(client, handler, msgs, pending, ack)
        finally:
            for i in pending.rest():  # stopped or raised mid-poll: give the rest back
                ack(i, _RELEASE)

    def _acker(
        self, client: ShareConsumerClient, msgs: list[KafkaMessage], pending: Outstanding
    ) -> Callable[[int, AcknowledgeType], None]:
        def ack(i: int, kind: AcknowledgeType) -> None:
            if not pending.take(i):
                return  # already acknowledged: the broker takes one acknowledgement
            client.acknowledge(msgs[i], kind)
            if kind is _ACCEPT:
                self.stats.accepted += 1
            elif kind is _RELEASE:
                self.stats.released += 1
            else:
                self.stats.rejected += 1

        return ack

    # ------------------------------------------------------------------ helpers
    def _decode(self, msg: KafkaMessage) -> ConsumerRecord | SerializationError:
        """The record, or the error of a record that cannot be deserialized (counted)."""
        try:
            return self._decoder.decode(msg)
        except SerializationError as exc:
            self.stats.deserialization_failures += 1
            return exc

    def _call(
        self, handler: Callable[[Any], object], record: ConsumerRecord, msg: KafkaMessage
    ) -> None:
        tel = self._tel
        if tel is None or not tel.tracing_enabled():
            handler(record)
            return
        with tel.process_span(
            msg.topic(),
            msg.partition(),
            msg.offset(),
            msg.key(),
            self.profile.group_id,
            msg.headers(),
        ):
            handler(record)

    def _check_slow(self, msg: KafkaMessage) -> None:
        """Warn when a record is acknowledged after its lock may have expired.

        The records of one poll are acquired together, so the time counts from the poll: a
        slow handler late in a large poll overruns the lock as surely as one slow call.
        """
        held_ms = (time.monotonic() - self._polled_at) * 1000.0
        if held_ms <= self._lock_ms:
            return
        self.stats.slow_handlers += 1
        detail = (
            f"{msg.topic()}[{msg.partition()}]@{msg.offset()} was handled {held_ms:,.0f} ms "
            f"after its poll, longer than the record lock ({self._lock_ms:,} ms): the broker may "
            "have delivered it to another member meanwhile; raise record_lock_duration_ms or "
            "lower batch_size"
        )
        self.stats.note(detail, logging.WARNING)
        if self._tel is not None:
            self._tel.safeguard("slow_handler", detail)

    def _over_budget(self, left: int) -> None:
        """Count and say that ``left`` records of a poll were released for the lock budget."""
        self.stats.lock_budget_releases += left
        self.stats.note(
            f"{left} record(s) of a poll released unhandled: "
            f"{LOCK_BUDGET:.0%} of the record lock ({self._lock_ms:,} ms) had passed since the "
            "poll; raise record_lock_duration_ms if this repeats"
        )

    def _count_retry(self) -> None:
        self.stats.retries += 1
        if self._tel is not None:
            self._tel.retry("handler")

    def _commit(self, client: ShareConsumerClient, context: str) -> set[tuple[str, int]]:
        """Commit the acknowledgements; return the partitions whose commit was refused."""
        result = _seam(lambda: client.commit_sync(_COMMIT_TIMEOUT_S), context)
        refused = {(tp.topic, tp.partition) for tp, err in (result or {}).items() if err}
        for (topic, partition), err in (
            ((tp.topic, tp.partition), e) for tp, e in (result or {}).items() if e
        ):
            self.stats.note(f"{context}: {topic}[{partition}] refused: {err}", logging.WARNING)
        return refused

    def _on_ack_commit(
        self, offsets: Mapping[TopicPartition, set[int]], exc: KafkaException | None
    ) -> None:
        if exc is None:
            return
        n = sum(len(v) for v in offsets.values())
        self.stats.ack_failures += n
        detail = (
            f"the broker refused {n} acknowledgement(s): {exc} (a lock expired, or the record "
            "went to another member): those records are delivered again"
        )
        self.stats.note(detail, logging.WARNING)
        if self._tel is not None:
            self._tel.safeguard("ack_failed", detail)


def _as_list(polled: Iterable[KafkaMessage]) -> list[KafkaMessage]:
    """A poll's messages as a list: ``Messages.records()`` (a copy of its list), else ``list()``."""
    records = getattr(polled, "records", None)
    out = records() if callable(records) else None
    return out if type(out) is list else list(polled)


def _seam(call: Callable[[], T], context: str) -> T:
    """One share-consumer call through the error seam (a broker without share groups named)."""
    try:
        with translating(context):
            return call()
    except KafkaClientError as exc:
        if exc.code in NO_SUPPORT_CODES:
            raise with_hint(exc) from exc
        raise
