"""The read-process-write Processor: one loop, three guarantees, every error path named."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Literal

from confluent_kafka import Consumer as _ConsumerClient

from sdk._client import ConsumerClient, KafkaMessage, ProducerClient
from sdk._config import ClientConfig
from sdk._deprecation import moved, renamed
from sdk.consumer import Ordering
from sdk.consumer.engine import (
    ConsumeLoop,
    GroupSource,
    RecordDecoder,
    RegistryWait,
    check_concurrency,
)
from sdk.core.session import TransactionSession, transactional_id_for
from sdk.errors import (
    ClosedError,
    ConfigurationError,
    SdkError,
)
from sdk.failure import HandlerRunner
from sdk.lifecycle import Lifecycle
from sdk.observability import Telemetry, get_logger, redact
from sdk.partitioners import Partitioner
from sdk.processor._commits import TransactionCommits
from sdk.processor._handling import TransactionHandling
from sdk.processor._progress import Progress, ProgressTracker
from sdk.processor._records import (
    BatchHandler,
    Handler,
    ProcessorStats,
)
from sdk.producer import Producer
from sdk.profiles import Guarantee, ProcessingProfile
from sdk.records import only_topic
from sdk.serialization import Deserializer, Serializer

__all__ = ["Processor"]

_log = get_logger("sdk.processor")
_EOS = Guarantee.EXACTLY_ONCE
_ALO = Guarantee.AT_LEAST_ONCE


class Processor:
    """Consume → handle → produce, under the guarantee of a :class:`ProcessingProfile`.

    * ``exactly_once``: one transactional producer per instance. Outputs and input offsets are
      one transaction (KIP-447 ``send_offsets_to_transaction`` with the consumer's group
      metadata), committed every ``commit_interval_ms`` or ``max_records_per_transaction``.
    * ``at_least_once``: outputs are flushed, then the input offsets are stored (auto-commit).
    * ``at_most_once``: input offsets are committed before the handler runs.

    The handler is given to :meth:`run` (or a batch handler to :meth:`run_batch`), as on
    every front end::

        with Processor(profile, ["words"], instance_id="worker-0") as p:
            p.run(upper)

    Args:
        profile: The processing profile (guarantee, consumer, producer, commit cadence).
        input_topics: Topics to subscribe to.
        handler: Deprecated, removed in 0.3: give the handler to :meth:`run`.
        batch_handler: Deprecated, removed in 0.3: give the batch handler to :meth:`run_batch`.
        transactional_id: Concrete transactional.id (overrides the profile's).
        instance_id: Stable id of this instance, appended to the profile's
            ``transactional_id_prefix``. It must survive restarts: a restarted instance with the
            same id fences its predecessor (``init_transactions``) and aborts its open
            transaction; a fresh random id would leave that transaction open until it times out,
            blocking read_committed readers of the output partitions.
        key_deserializer: Name (``bytes``, ``str``, ``json``) or callable, as the Consumer's:
            the handler's ``record.key``. A record that cannot be deserialized goes through
            ``failure`` (its dead-letter record is an output of the same transaction).
        value_deserializer: Same, for ``record.value``.
        key_serializer: Name (``bytes``, ``str``, ``json``) or callable ``(obj, ctx) -> bytes``,
            as the Producer's: turns each output's ``key`` into bytes (with a registry
            serializer, the partitioner places the *serialized* key). A failure raises
            :class:`~sdk.errors.SerializationError` and aborts the open transaction (nothing of
            it is visible); a registry that does not answer is waited for (as for the
            deserializers, up to the serializer's ``registry_timeout_s``).
        value_serializer: Same, for each output's ``value``.
        on_fenced: ``"raise"`` (default) closes the producer and raises ProducerFencedError;
            ``"recreate"`` makes a new producer (new epoch), rewinds and continues.
        poll_timeout_s: How long one consume() waits for records.
        partitioner: Places keyed output (default: the producer profile's ``partitioner``,
            Java-compatible murmur2), the same as the SDK :class:`~sdk.producer.Producer`.
        producer_factory: Makes the producer client from a librdkafka dict (tests pass fakes).
        consumer_factory: Makes the consumer client from a librdkafka dict.
        telemetry: Spans/metrics hooks, as for the Producer and the Consumer: None uses
            :meth:`Telemetry.default` (records nothing until the application installs an
            OpenTelemetry SDK); False records nothing at all. See docs/observability.md.
        on_progress: Called with a :class:`Progress` after every rebalance event and every
            commit (assignment, committed positions), so a supervisor need not poll the
            broker; runs in the processor's thread, its exceptions are logged and ignored.
        verify_cluster: Before the first connection, check the cluster against the profile
            and the input topics (:func:`sdk.doctor.verify`; outputs are not known before the
            handler returns them): a FAIL raises :class:`~sdk.errors.DoctorError` from
            :meth:`run`, naming each failing check.

    Raises:
        ConfigurationError: Both deprecated handlers, no input topic, or no transactional id
            for exactly_once.
    """

    def __init__(
        self,
        profile: ProcessingProfile,
        input_topics: Sequence[str],
        handler: Handler | None = None,
        *,
        batch_handler: BatchHandler | None = None,
        transactional_id: str | None = None,
        instance_id: str | None = None,
        key_deserializer: str | Deserializer = "bytes",
        value_deserializer: str | Deserializer = "bytes",
        key_serializer: str | Serializer = "bytes",
        value_serializer: str | Serializer = "bytes",
        on_fenced: Literal["raise", "recreate"] = "raise",
        poll_timeout_s: float = 0.1,
        partitioner: str | Partitioner | None = None,
        producer_factory: Callable[[ClientConfig], ProducerClient] | None = None,
        consumer_factory: Callable[[ClientConfig], ConsumerClient] = _ConsumerClient,
        telemetry: Telemetry | Literal[False] | None = None,
        on_progress: Callable[[Progress], object] | None = None,
        verify_cluster: bool = False,
    ) -> None:
        if handler is not None or batch_handler is not None:
            moved("handler", "Processor()", "run() (a batch handler to run_batch())")
            if handler is not None and batch_handler is not None:
                raise ConfigurationError(
                    "handler: give exactly one of handler and batch_handler", field="handler"
                )
        if not input_topics:
            raise ConfigurationError("input_topics: at least one topic", field="input_topics")
        self.profile = profile
        self.guarantee = profile.guarantee
        self.topics = list(input_topics)
        self._poll_timeout = poll_timeout_s
        self._tel = tel = (
            Telemetry.disabled() if telemetry is False else (telemetry or Telemetry.default())
        )
        self._group = profile.consumer.group_id
        self._runner = HandlerRunner(
            profile.consumer.failure, on_retry=lambda: tel.retry("handler")
        )
        self.stats = ProcessorStats()
        self.state = Lifecycle.NEW
        # sdk.aio: called with each polled batch right before its records are handled (after
        # the at-most-once commit), to run the batch's async handlers in one loop crossing
        self._before_handle: Callable[[list[KafkaMessage]], object] | None = None
        self._poll_limit = profile.consumer.batch_size  # sdk.aio takes smaller polls
        self._progress = ProgressTracker(on_progress, lambda: self.stats.records_in)
        self.transactional_id = transactional_id_for(profile, transactional_id, instance_id)
        # every output goes through the SDK Producer: the profile's partitioner places keys
        # exactly as the Producer (and Java) would, which the Processor's own raw producer
        # once did not (CRC32 instead of murmur2)
        self._producer = Producer(
            profile.producer,
            transactional_id=self.transactional_id,
            key_serializer=key_serializer,
            value_serializer=value_serializer,
            partitioner=partitioner,
            check_topics=False,  # an unknown output topic fails delivery, as in a transaction
            telemetry=tel,
            client_factory=producer_factory,
        )
        self._txn = TransactionSession(self._producer, stats=self.stats, telemetry=tel)
        self._commits = TransactionCommits(
            profile,
            self.stats,
            self._txn,
            tel,
            self._progress,
            on_fenced,
            lambda: self._consumer,
            only_topic(self.topics),
        )
        decoder = RecordDecoder(key_deserializer, value_deserializer)
        # a registry that does not answer is waited for, on the record in hand (its input
        # decoded, or its output serialized), never taken for a bad record; a stop ends it
        decoder.registry_wait.on_retry = self._count_registry_retry
        outputs_wait = (
            None
            if self._producer._path.raw
            else RegistryWait.for_serdes(key_serializer, value_serializer)
        )
        if outputs_wait is not None:
            outputs_wait.on_retry = self._count_registry_retry
        self._handling = TransactionHandling(
            profile,
            self.stats,
            tel,
            self._txn,
            self._runner,
            self._commits,
            None if decoder.raw else decoder,  # bytes in: the hot path, no decoding step
            handler,
            batch_handler,
            outputs_wait,
        )
        source = GroupSource(
            profile.consumer,
            self.topics,
            self.stats,
            self._commits,
            client_factory=consumer_factory,
            telemetry=tel,
            configure=self._configure,
            # exactly_once: init_transactions fences older epochs first; before it (every
            # guarantee) a broker must answer: BrokerUnreachableError names the address if
            # none does, and a stop request (Ctrl-C) ends the wait
            ready=lambda _: self._txn.start(stopped=self._engine.stopped),
        )
        self._engine = ConsumeLoop(
            source,
            self._commits,
            name="Processor",
            batch_size=profile.consumer.batch_size,
            poll_timeout_s=poll_timeout_s,
            telemetry=tel,
            verify=(profile, self.topics) if verify_cluster else None,
        )
        for wait in (decoder.registry_wait, outputs_wait):
            if wait is not None:
                wait.stopped = self._engine.stopped

    def _count_registry_retry(self) -> None:
        self.stats.registry_retries += 1
        self._tel.retry("schema_registry")

    @property
    def _consumer(self) -> ConsumerClient | None:
        """The consumer client (None before the run and after close)."""
        return self._engine.client

    @property
    def assignment(self) -> list[tuple[str, int]]:
        """The ``(topic, partition)`` pairs this processor owns now, sorted."""
        return sorted(self._progress.assignment)

    @property
    def committed(self) -> dict[tuple[str, int], int]:
        """Next offset per owned partition, as this processor last committed (or stored)."""
        return dict(self._progress.committed)

    # ---------------------------------------------------------------- lifecycle
    def __enter__(self) -> Processor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stop(self) -> None:
        """Ask :meth:`run` to commit what it has and return (thread- and signal-safe)."""
        self._engine.stop()

    def close(self) -> None:
        """Stop, commit or abort the open work, and close both clients (idempotent)."""
        self._engine.stop()
        if self.state is Lifecycle.CLOSED:
            return
        self.state = Lifecycle.CLOSED
        self._engine.close()
        if self._producer._client is not None and not self._txn.open:
            with contextlib.suppress(SdkError):  # a fenced producer has nothing to flush
                self._txn.flush("flush on close")
        self._txn.close()
        self._producer.close()  # no client left: only marks it closed
        self._handling.close()

    def run(
        self,
        handler: Handler | None = None,
        *,
        max_duration_s: float | None = None,
        handle_sigterm: bool | None = None,
        max_seconds: float | None = None,
        concurrency: int = 1,
        ordering: Ordering = "key",
        handler_timeout_s: float | None = None,
    ) -> ProcessorStats:
        """Run ``handler`` on every record until :meth:`stop`; commit and close on the way out.

        A Processor runs once: after :meth:`run` returns it is closed.

        With ``concurrency=N`` (N > 1) the handlers of each polled batch run on N threads,
        records of one ordering key one at a time in offset order; the batch's outputs then
        go through the transaction in offset order, once all of it was handled, so a
        transaction never holds the output of a record whose offset it does not commit
        (docs/concurrency.md).

        Args:
            handler: ``record -> iterable of OutputRecord`` (or None); the record is the
                Consumer's :class:`~sdk.consumer.ConsumerRecord` (``.key``/``.value`` as
                bytes, ``.topic``, ``.partition``, ``.offset``, ``.headers``; ``.raw`` is the
                confluent ``Message``). Required unless given to the (deprecated) constructor.
            max_duration_s: Return after this many seconds (the pending work is committed
                first).
            handle_sigterm: SIGTERM calls :meth:`stop` while running, like
                :meth:`sdk.consumer.Consumer.run`: the loop commits what it handled and
                returns. None (default): in the main thread, unless the application has its
                own SIGTERM handler; True: always (main thread only); False: never.
            max_seconds: Deprecated name of ``max_duration_s``, removed in 0.3.
            concurrency: Handler threads (1: one record after another, in this thread).
            ordering: With ``concurrency`` > 1, which records never run at the same time:
                ``"key"`` (the same key in a partition), ``"partition"`` or ``"unordered"``.
            handler_timeout_s: With ``concurrency`` > 1, a handler still running after this
                long fails its record without retries: its dead-letter output goes into the
                transaction, or the run stops (abort). Its thread is abandoned and replaced
                (what it returns later is ignored). None: no limit.

        Returns:
            The counters.

        Raises:
            ClosedError: The processor was closed.
            ConfigurationError: No handler (or one given both here and to the constructor),
                ``handle_sigterm=True`` outside the main thread, or a bad ``concurrency`` or
                ``ordering``.
            ProducerFencedError: Fenced with ``on_fenced="raise"`` (or fatal producer error).
            HandlerError: The handler failed with ``failure.on_failure="stop"``.
            BrokerUnreachableError: No broker of ``bootstrap_servers`` answered at the start,
                for ``socket.connection.setup.timeout.ms`` (30 s unless set in ``extras``).
            KafkaClientError: Another unrecoverable Kafka error.
            DoctorError: ``verify_cluster=True`` and a check of the cluster failed.
        """
        limit = renamed(
            "Processor.run", "max_seconds", max_seconds, "max_duration_s", max_duration_s
        )
        order, _ = check_concurrency(concurrency, ordering, None, handler_timeout_s)
        return self._run(
            handler, None, limit, handle_sigterm, (concurrency, order), handler_timeout_s
        )

    def run_batch(
        self,
        handler: BatchHandler | None = None,
        *,
        max_duration_s: float | None = None,
        handle_sigterm: bool | None = None,
        max_seconds: float | None = None,
    ) -> ProcessorStats:
        """Like :meth:`run`, but ``handler(records)`` gets each polled batch at once.

        Args:
            handler: ``list of ConsumerRecord -> iterable of OutputRecord`` (or None).
            max_duration_s: See :meth:`run`.
            handle_sigterm: See :meth:`run`.
            max_seconds: Deprecated name of ``max_duration_s``, removed in 0.3.

        Raises:
            ClosedError: See :meth:`run`.
            ConfigurationError: See :meth:`run`.
            ProducerFencedError: See :meth:`run`.
            HandlerError: See :meth:`run` (``.record`` is the list of records).
            KafkaClientError: See :meth:`run`.
        """
        limit = renamed(
            "Processor.run_batch", "max_seconds", max_seconds, "max_duration_s", max_duration_s
        )
        return self._run(None, handler, limit, handle_sigterm)

    def _run(
        self,
        handler: Handler | None,
        batch_handler: BatchHandler | None,
        max_duration_s: float | None,
        handle_sigterm: bool | None,
        concurrency: tuple[int, Ordering] = (1, "key"),
        handler_timeout_s: float | None = None,
    ) -> ProcessorStats:
        if self.state is Lifecycle.CLOSED:
            raise ClosedError("Processor.run() after close()")
        self._handling.use(handler, batch_handler)
        deadline = None if max_duration_s is None else time.monotonic() + max_duration_s
        try:
            # a stop while waiting for the schema registry ends the run as a stop (the engine's
            # running); the open transaction is aborted on the way out of _loop first
            with self._engine.running(handle_sigterm) as client:
                if client is not None:  # None: stopped while waiting for a broker
                    with self._handling.concurrently(
                        *concurrency, self._engine.stop, handler_timeout_s
                    ):
                        self._loop(deadline)
        finally:
            self.close()
        return self.stats

    def _loop(self, deadline: float | None) -> None:
        self.state = Lifecycle.RUNNING
        stopped = self._engine.stopped
        try:
            while not stopped():
                if deadline is not None and time.monotonic() >= deadline:
                    break
                self._step()
        except BaseException as exc:
            self._commits.abort_open(exc)
            raise
        self.state = Lifecycle.STOPPING  # the engine's end of the run commits

    def _start(self) -> None:
        """Create and subscribe the consumer (after the producer's start; unit tests call it)."""
        self._engine.open()

    def _configure(self, config: ClientConfig) -> None:
        """The consumer's config: the lag gauge; the start logged with both configs."""
        if "statistics.interval.ms" in config and "stats_cb" not in config:
            config["stats_cb"] = self._tel.stats_callback(self._group)  # consumer lag gauge
        _log.info(
            "processor starting: %s on %s",
            self.guarantee.value,
            self.topics,
            extra={
                "guarantee": self.guarantee.value,
                "transactional_id": self.transactional_id,
                "consumer_config": redact(config),
                "producer_config": redact(self._producer.config),
            },
        )

    # ---------------------------------------------------------------- the loop
    def _step(self) -> None:
        client = self._engine.client
        assert client is not None  # the run's client
        commits = self._commits
        wait_s = commits.wait_s(self._poll_timeout)
        records = self._engine.source.poll(client, self._poll_limit, wait_s)
        if records:
            records = commits.admit(client, records)
            if not records:
                return  # not handled: another member may own these partitions now
            if self._before_handle is not None:
                self._before_handle(records)
            self._handling.handle(records)
        if commits.due():
            commits.commit_or_recover()
