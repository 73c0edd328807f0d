"""The SDK consumer: a guarantee-shaped wrapper that holds a ``confluent_kafka.Consumer``."""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Literal

from sdk._client import ConsumerClient, KafkaMessage
from sdk._config import ClientConfig, ConfigMapping
from sdk._deprecation import renamed
from sdk.consumer._commits import OffsetKeeper
from sdk.consumer._concurrent import ConcurrentRun, Ordering, check_concurrency
from sdk.consumer._failure import FailurePath
from sdk.consumer._handling import RecordHandling
from sdk.consumer._loop import ConsumeLoop, GroupSource
from sdk.consumer._records import (
    BatchRecordHandler,
    ConsumerRecord,
    ConsumerStats,
    RecordHandler,
)
from sdk.consumer._scheduler import ordering_key
from sdk.errors import (
    ClosedError,
    ConfigurationError,
    SdkError,
)
from sdk.lifecycle import Lifecycle
from sdk.observability import Telemetry
from sdk.profiles import ConsumerProfile, Guarantee
from sdk.serialization import Deserializer

__all__ = ["Consumer"]

_log = logging.getLogger(__name__)
_AMO = Guarantee.AT_MOST_ONCE
_ALO = Guarantee.AT_LEAST_ONCE


class Consumer:
    """Consume with the commit ordering of an ``at_most_once`` or ``at_least_once`` profile.

    * ``at_most_once``: each polled batch's offsets are committed **synchronously before** any
      handler runs. A crash loses the records in flight, never repeats one.
    * ``at_least_once``: an offset is stored only **after** its record was handled (or
      dead-lettered); librdkafka's auto-commit timer commits stored offsets, and the SDK
      commits them synchronously on revoke, at the end of every run and on close. A crash
      repeats the records handled since the last commit, never loses one.

    Three ways to consume: :meth:`run` (one record per handler call), :meth:`run_batch` (up to
    ``profile.batch_size`` per call) and iteration with explicit :meth:`ack`. A failing handler
    is retried per ``profile.failure``, then the record goes to the dead-letter topic or the
    run stops with :class:`HandlerError`; records that cannot be deserialized go the same way
    with a :class:`SerializationError`. No network I/O happens before the first run.

    Example::

        with Consumer(profile, ["logs"], value_deserializer="json") as consumer:
            consumer.run(lambda record: store(record.value), handle_sigterm=True)

    Args:
        profile: The consumer profile (``at_most_once`` or ``at_least_once``).
        topics: Topics to subscribe to (names, or ``^regex`` patterns).
        key_deserializer: Name (``bytes``, ``str``, ``json``) or ``(data, topic) -> object``.
        value_deserializer: Same, for values.
        dead_letter_producer_config: Extra librdkafka keys for the dead-letter producer (it is
            always acks=all and idempotent; keys that would weaken that are refused).
        poll_timeout_s: Longest wait of one poll; bounds how late :meth:`stop` is noticed.
        client_factory: Builds the client from the rendered config (default
            ``confluent_kafka.Consumer``).
        telemetry: OpenTelemetry hooks (a ``process <topic>`` span per record or batch,
            parented to the producer's trace context from the headers; rebalance, retry and
            dead-letter metrics). None uses ``Telemetry.default()`` (records nothing until the
            application installs an SDK; checked once per polled batch); False: none.
        verify_cluster: Before the first connection, check the cluster against the profile
            and the topics (:func:`sdk.doctor.verify`): a FAIL (a missing topic, unclean
            leader election under at_least_once, a missing ACL...) raises
            :class:`~sdk.errors.DoctorError` from the first run, naming each failing check.

    Raises:
        ConfigurationError: An ``exactly_once`` profile (use :class:`sdk.processor.Processor`),
            no topics, an unknown deserializer, a bad ``failure.retry_on`` type, or a
            dead-letter producer key that would weaken it.
    """

    def __init__(
        self,
        profile: ConsumerProfile,
        topics: Sequence[str],
        *,
        key_deserializer: str | Deserializer = "bytes",
        value_deserializer: str | Deserializer = "bytes",
        dead_letter_producer_config: ConfigMapping | None = None,
        poll_timeout_s: float = 0.2,
        client_factory: Callable[[ClientConfig], ConsumerClient] | None = None,
        telemetry: Telemetry | Literal[False] | None = None,
        verify_cluster: bool = False,
    ) -> None:
        if profile.guarantee is Guarantee.EXACTLY_ONCE:
            raise ConfigurationError(
                "guarantee: an exactly_once consumer must commit its offsets inside the "
                "producer's transaction; use sdk.processor.Processor with a ProcessingProfile",
                field="guarantee",
            )
        names = [topics] if isinstance(topics, str) else list(topics)
        if not names or not all(isinstance(t, str) and t for t in names):
            raise ConfigurationError(
                "topics: give at least one non-empty topic name", field="topics"
            )
        if poll_timeout_s <= 0:
            raise ConfigurationError("poll_timeout_s: must be > 0", field="poll_timeout_s")
        self.profile = profile
        self.guarantee = profile.guarantee
        self.topics = names
        self.stats = ConsumerStats()
        self._failure = FailurePath(
            profile, self.stats, key_deserializer, value_deserializer, dead_letter_producer_config
        )
        tel: Telemetry | None = None if telemetry is False else (telemetry or Telemetry.default())
        # sdk.aio: called with each polled batch of run() right before it is handled (after
        # the at-most-once commit), to run the batch's async handlers in one loop crossing;
        # returns how many records (from the first) had their handler run or begun, and how
        # many of those succeeded (finished: the core does not walk them again)
        self._before_handle: Callable[[list[KafkaMessage]], tuple[int, int]] | None = None
        self._offsets = OffsetKeeper(profile.guarantee, self.stats)
        self._failure.telemetry = tel
        self._offsets.telemetry = tel
        self._source = GroupSource(
            profile, names, self.stats, self._offsets, client_factory=client_factory, telemetry=tel
        )
        self._loop = ConsumeLoop(
            self._source,
            self._offsets,
            name="Consumer",
            batch_size=profile.batch_size,
            poll_timeout_s=poll_timeout_s,
            telemetry=tel,
            verify=(profile, names) if verify_cluster else None,
        )
        self._handling = RecordHandling(self._loop, self._failure, self._offsets, profile.group_id)
        # a stop ends a wait for the schema registry at once (the record is read again)
        self._failure.decoder.registry_wait.stopped = self._loop.stopped

    # ------------------------------------------------------------------ lifecycle
    @property
    def state(self) -> Lifecycle:
        """Where the consumer is in its lifecycle."""
        return self._loop.state

    @property
    def assignment(self) -> list[tuple[str, int]]:
        """The ``(topic, partition)`` pairs this member owns now, sorted (thread-safe read)."""
        return self._source.assignment

    @property
    def config(self) -> ClientConfig:
        """The librdkafka configuration the client is (or will be) created with."""
        return dict(self.profile.render())

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        try:
            self.close()
        except SdkError:
            if exc_info[1] is None:
                raise  # a failed final commit is reported, unless it would mask another error

    def stop(self) -> None:
        """Make the current (or next) run return soon; thread- and signal-safe.

        ``at_least_once`` stops after the record in hand; ``at_most_once`` first finishes the
        polled batch (its offsets are already committed: skipping it would lose it). The run
        then commits what was handled and returns.
        """
        self._loop.stop()

    def close(self) -> None:
        """Commit the stored offsets (at_least_once), leave the group, release clients.

        Idempotent. Only :meth:`stop` may be called from another thread while a run is going.

        Raises:
            KafkaClientError: The final commit failed (the client is closed anyway).
        """
        if self._loop.state is Lifecycle.CLOSED:
            return
        try:
            self._loop.close(lambda client: self._offsets.commit_stored(client, "commit on close"))
        finally:
            self._failure.close()

    # ------------------------------------------------------------------ public loops
    def run(
        self,
        handler: RecordHandler | Callable[[ConsumerRecord], object],
        *,
        max_records: int | None = None,
        idle_timeout_s: float | None = None,
        handle_sigterm: bool | None = None,
        idle_timeout: float | None = None,
        concurrency: int = 1,
        ordering: Ordering = "key",
        max_buffered: int | None = None,
        handler_timeout_s: float | None = None,
    ) -> ConsumerStats:
        """Call ``handler(record)`` for each record until stopped; commit per the guarantee.

        With ``concurrency=N`` (N > 1) the handler runs on N threads (for handlers that wait
        on I/O): records of one ordering key run one at a time in offset order, records of
        different keys at the same time. at_least_once stores, per partition, the offset after
        the longest prefix of finished records, so a crash repeats only the records in flight
        or finished above that prefix; at_most_once commits each batch before any of it runs,
        as without concurrency. See docs/concurrency.md.

        Args:
            handler: Called once per record (retried per ``profile.failure``).
            max_records: Return after taking this many records from Kafka (poison pills count).
            idle_timeout_s: Return after this many seconds without a record, counted from the
                latest partition assignment (a slow group join is not idleness). Before the
                first assignment it bounds only the wait for an unreachable broker.
            handle_sigterm: SIGTERM calls :meth:`stop` while running: the run commits what was
                handled and returns. None (default): in the main thread, unless the
                application has its own SIGTERM handler; True: always (main thread only);
                False: never.
            idle_timeout: Deprecated name of ``idle_timeout_s``, removed in 0.3.
            concurrency: Handler threads (1: records one after another, in this thread).
            ordering: With ``concurrency`` > 1, which records never run at the same time:
                ``"key"`` (records with the same key in a partition; records without a key
                count as one key), ``"partition"``, or ``"unordered"``.
            max_buffered: With ``concurrency`` > 1, records taken and not finished at which
                the partitions are paused (polling goes on); resumed at half of it. Default
                ``max(1000, 100 * concurrency)``.
            handler_timeout_s: With ``concurrency`` > 1, a record still in its handler after
                this long goes through the failure policy without retries: dead-lettered
                (then done; its key's next record may start) or the run stops with
                :class:`HandlerError`. The call itself cannot be interrupted: its thread is
                abandoned and replaced, and what it does later is ignored. None: no limit.

        Returns:
            The counters (cumulative over runs).

        Raises:
            ClosedError: The consumer is closed.
            HandlerError: The handler failed every attempt and ``on_failure="stop"``; the
                record is on ``.record`` and its offset is not stored.
            SerializationError: A poison pill with ``on_failure="stop"``.
            UnknownTopicError: A subscribed topic does not exist.
            BrokerUnreachableError: ``idle_timeout_s`` passed without ever reaching a broker.
            AuthenticationError: ``idle_timeout_s`` passed and the broker refused the
                credentials.
            KafkaClientError: A commit, dead-letter delivery or fatal client error.
            ConfigurationError: ``handle_sigterm=True`` outside the main thread.
            DoctorError: ``verify_cluster=True`` and a check of the cluster failed.
            ConfigurationError: A bad ``concurrency``, ``ordering``, ``max_buffered`` or
                ``handler_timeout_s`` (which needs ``concurrency`` > 1).
        """
        idle_s = renamed(
            "Consumer.run", "idle_timeout", idle_timeout, "idle_timeout_s", idle_timeout_s
        )
        order, bound = check_concurrency(concurrency, ordering, max_buffered, handler_timeout_s)
        if concurrency > 1:
            self._run_concurrently(
                handler,
                concurrency,
                order,
                bound,
                max_records,
                idle_s,
                handle_sigterm,
                handler_timeout_s,
            )
            return self.stats
        with self._loop.running(handle_sigterm):
            for messages in self._loop.batches(max_records, idle_s):
                ahead = finished = 0
                try:
                    if self._before_handle is not None:  # sdk.aio: one loop crossing per batch
                        ahead, finished = self._before_handle(messages)
                    self._handling.each(handler, messages, ahead, finished)
                finally:  # a stop or an error inside the batch: its rest is read again
                    self._offsets.rewind_rest(self._loop.client, messages, self._loop.in_flight)
        return self.stats

    def _run_concurrently(
        self,
        handler: Callable[[ConsumerRecord], object],
        concurrency: int,
        ordering: Ordering,
        max_buffered: int,
        max_records: int | None,
        idle_s: float | None,
        handle_sigterm: bool | None,
        handler_timeout_s: float | None,
    ) -> None:
        if self._before_handle is not None:
            raise ConfigurationError(
                "concurrency: the asyncio consumer runs its handlers on the event loop; "
                "concurrency > 1 is for Consumer.run with a sync handler",
                field="concurrency",
            )
        with (
            self._loop.running(handle_sigterm),
            ConcurrentRun(
                self._loop,
                self._failure,
                self._offsets,
                handler,
                concurrency=concurrency,
                ordering=ordering,
                max_buffered=max_buffered,
                group_id=self.profile.group_id,
                handler_timeout_s=handler_timeout_s,
            ) as run,
        ):
            for messages in self._loop.batches(
                max_records, idle_s, before_poll=run.before_poll, busy=run.busy, room=run.room
            ):
                run.feed(messages)
            run.finish()

    def run_batch(
        self,
        handler: BatchRecordHandler | Callable[[list[ConsumerRecord]], object],
        *,
        max_records: int | None = None,
        idle_timeout_s: float | None = None,
        handle_sigterm: bool | None = None,
        idle_timeout: float | None = None,
        concurrency: int = 1,
        ordering: Ordering = "key",
    ) -> ConsumerStats:
        """Like :meth:`run`, but ``handler(records)`` gets each polled batch at once.

        A failing batch is retried as a whole, then dead-lettered record by record (or the run
        stops). Poison pills are taken out of the batch: the records before one are handled
        first, so per-partition order of offsets is kept.

        With ``concurrency=N`` (N > 1) each polled batch is split by ``ordering`` key into up
        to N sub-batches (one key's records in one sub-batch, in offset order), handled at the
        same time on N threads; the batch's offsets are stored once all of them are done.

        Raises:
            ClosedError: See :meth:`run`.
            HandlerError: See :meth:`run` (``.record`` is the list of records).
            SerializationError: See :meth:`run`.
            KafkaClientError: See :meth:`run`.
            ConfigurationError: See :meth:`run`; a bad ``concurrency`` or ``ordering``.
        """
        idle_s = renamed(
            "Consumer.run_batch", "idle_timeout", idle_timeout, "idle_timeout_s", idle_timeout_s
        )
        order, _ = check_concurrency(concurrency, ordering, None)
        key_of = None if order == "unordered" else ordering_key(order)
        with (
            self._loop.running(handle_sigterm),
            ThreadPoolExecutor(concurrency, thread_name_prefix="sdk-batch") as pool,
        ):
            for messages in self._loop.batches(max_records, idle_s):
                try:
                    if concurrency == 1:
                        self._handling.batch(handler, messages)
                    else:
                        self._handling.batch_split(handler, messages, pool, concurrency, key_of)
                finally:  # an error inside the batch: its rest is read again
                    self._offsets.rewind_rest(self._loop.client, messages, self._loop.in_flight)
        return self.stats

    def records(
        self,
        *,
        max_records: int | None = None,
        idle_timeout_s: float | None = None,
        handle_sigterm: bool = False,
        idle_timeout: float | None = None,
    ) -> Generator[ConsumerRecord, None, None]:
        """Yield records; ``at_least_once`` stores an offset only once :meth:`ack` allows.

        ``at_most_once`` commits each polled batch before yielding its first record, so
        :meth:`ack` is a no-op there. ``at_least_once`` stores, per partition, the offset after
        the longest prefix of acknowledged records (acks may come out of order). Records not
        acknowledged when their partition is revoked are delivered again (to the new owner).

        ``handle_sigterm`` is off by default here, unlike :meth:`run`: a loop that leaves the
        iteration early would keep SIGTERM turned into :meth:`stop` until the iterator is
        closed, and the process would not end on SIGTERM.

        Raises:
            ClosedError: See :meth:`run`.
            SerializationError: A poison pill with ``on_failure="stop"`` (with ``"dlq"`` it is
                dead-lettered and acknowledged without being yielded).
            KafkaClientError: See :meth:`run`.
        """
        idle_s = renamed(
            "Consumer.records", "idle_timeout", idle_timeout, "idle_timeout_s", idle_timeout_s
        )
        loop = self._loop
        with loop.running(handle_sigterm) as client:
            if client is not None:
                # records an earlier iteration handed out and that were never acknowledged:
                # read again from the first of them (their late acks no longer count)
                self._offsets.rewind_open(client)
            messages: list[KafkaMessage] = []
            try:
                for messages in loop.batches(max_records, idle_s):
                    for message in messages:
                        self._offsets.track(message)
                        record = self._failure.decode(message)
                        loop.in_flight -= 1
                        if record is None:
                            self._offsets.ack(
                                loop.client, message.topic(), message.partition(), message.offset()
                            )
                        else:
                            yield record
            finally:
                # left inside a batch: its records not handed out yet are read again by the
                # next iteration, not skipped (the ones handed out may still be acknowledged)
                self._offsets.rewind_rest(loop.client, messages, loop.in_flight)

    def __iter__(self) -> Iterator[ConsumerRecord]:
        return self.records()

    def ack(self, record: ConsumerRecord) -> None:
        """Acknowledge a record from :meth:`records` (at_least_once: may store an offset).

        Raises:
            ClosedError: The consumer is closed.
            KafkaClientError: Storing the offset failed.
        """
        if self._loop.state is Lifecycle.CLOSED:
            raise ClosedError("ack() after close(): the offset can no longer be stored")
        self._offsets.ack(self._loop.client, record.topic, record.partition, record.offset)

    def dead_letter(self, record: ConsumerRecord, error: BaseException) -> None:
        """Send a record to the dead-letter topic and wait for it (then :meth:`ack` it).

        Raises:
            ConfigurationError: The profile has no ``failure.dlq_topic``.
            KafkaClientError: The dead-letter record was not acknowledged.
        """
        if self._failure.dlq is None:
            raise ConfigurationError(
                "failure.dlq_topic: dead_letter() needs a dead-letter topic in the profile",
                field="failure.dlq_topic",
            )
        self._failure.dlq.send(record.raw, error, attempts=0, stage="user")
        self.stats.dead_lettered += 1
