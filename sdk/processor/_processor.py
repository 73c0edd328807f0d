"""The read-process-write Processor: one loop, three guarantees, every error path named."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal

from confluent_kafka import Consumer as _ConsumerClient
from confluent_kafka import TopicPartition

from sdk._client import ConsumerClient, KafkaMessage, ProducerClient, call_kafka, consume_ready
from sdk._connection import BrokerContact
from sdk._deprecation import moved, renamed
from sdk._signals import sigterm_stops
from sdk.consumer.engine import HandledMarks, commit_before_handling, member_id
from sdk.core.session import TransactionSession, transactional_id_for
from sdk.errors import (
    ClosedError,
    ConfigurationError,
    KafkaClientError,
    KafkaTimeoutError,
    SdkError,
    from_kafka_error,
)
from sdk.failure import HandlerRunner
from sdk.observability import Telemetry, get_logger, redact
from sdk.partitioners import Partitioner
from sdk.processor._handling import HandlingLoop
from sdk.processor._positions import counting, rewind_to_committed
from sdk.processor._progress import Progress, ProgressTracker
from sdk.processor._records import (
    BatchHandler,
    Handler,
    ProcessorState,
    ProcessorStats,
)
from sdk.producer import Producer
from sdk.profiles import Guarantee, ProcessingProfile

__all__ = ["Processor"]

_log = get_logger("sdk.processor")
_EOS = Guarantee.EXACTLY_ONCE
_ALO = Guarantee.AT_LEAST_ONCE


class Processor(HandlingLoop):
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
        handler: Deprecated: give the handler to :meth:`run`.
        batch_handler: Deprecated: give the batch handler to :meth:`run_batch`.
        transactional_id: Concrete transactional.id (overrides the profile's).
        instance_id: Stable id of this instance, appended to the profile's
            ``transactional_id_prefix``. It must survive restarts: a restarted instance with the
            same id fences its predecessor (``init_transactions``) and aborts its open
            transaction; a fresh random id would leave that transaction open until it times out,
            blocking read_committed readers of the output partitions.
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
        on_fenced: Literal["raise", "recreate"] = "raise",
        poll_timeout_s: float = 0.1,
        partitioner: str | Partitioner | None = None,
        producer_factory: Callable[[dict[str, Any]], ProducerClient] | None = None,
        consumer_factory: Callable[[dict[str, Any]], ConsumerClient] = _ConsumerClient,
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
        self._handler = handler
        self._batch_handler = batch_handler
        self._on_fenced = on_fenced
        self._poll_timeout = poll_timeout_s
        self._consumer_factory = consumer_factory
        self._tel = tel = (
            Telemetry.disabled() if telemetry is False else (telemetry or Telemetry.default())
        )
        self._group = profile.consumer.group_id
        self._runner = HandlerRunner(
            profile.consumer.failure, on_retry=lambda: tel.retry("handler")
        )
        self.stats = ProcessorStats()
        self.state = ProcessorState.CREATED
        self._stop = threading.Event()
        self._consumer: Any = None
        self._positions: dict[tuple[str, int], int] = {}
        self._pending = 0
        self._last_commit = time.monotonic()
        self._callback_error: BaseException | None = None
        # sdk.aio: called with each polled batch right before its records are handled (after
        # the at-most-once commit), to run the batch's async handlers in one loop crossing
        self._before_handle: Callable[[list[KafkaMessage]], object] | None = None
        self._member: str | None = None  # group member id that received the assignment
        self._handled_marks = HandledMarks()  # at_most_once: positions committed before handling
        self._progress = ProgressTracker(on_progress, lambda: self.stats.records_in)
        self.transactional_id = transactional_id_for(profile, transactional_id, instance_id)
        # every output goes through the SDK Producer: the profile's partitioner places keys
        # exactly as the Producer (and Java) would, which the Processor's own raw producer
        # once did not (CRC32 instead of murmur2)
        self._producer = Producer(
            profile.producer,
            transactional_id=self.transactional_id,
            partitioner=partitioner,
            check_topics=False,  # an unknown output topic fails delivery, as in a transaction
            telemetry=tel,
            client_factory=producer_factory,
        )
        self._txn = TransactionSession(self._producer, stats=self.stats, telemetry=tel)
        self._timeout_s = self._txn.timeout_s
        self._verify_cluster = verify_cluster

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
        self._stop.set()

    def close(self) -> None:
        """Stop, commit or abort the open work, and close both clients (idempotent)."""
        self._stop.set()
        if self.state is ProcessorState.CLOSED:
            return
        self.state = ProcessorState.CLOSED
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                self._consumer.close()
            self._consumer = None
        if self._producer._client is not None and not self._txn.open:
            with contextlib.suppress(SdkError):  # a fenced producer has nothing to flush
                self._txn.flush("flush on close")
        self._txn.close()
        self._producer.close()  # no client left: only marks it closed

    def run(
        self,
        handler: Handler | None = None,
        *,
        max_duration_s: float | None = None,
        handle_sigterm: bool | None = None,
        max_seconds: float | None = None,
    ) -> ProcessorStats:
        """Run ``handler`` on every record until :meth:`stop`; commit and close on the way out.

        A Processor runs once: after :meth:`run` returns it is closed.

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
            max_seconds: Deprecated name of ``max_duration_s``.

        Returns:
            The counters.

        Raises:
            ClosedError: The processor was closed.
            ConfigurationError: No handler (or one given both here and to the constructor),
                or ``handle_sigterm=True`` outside the main thread.
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
        return self._run(handler, None, limit, handle_sigterm)

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
            max_seconds: Deprecated name of ``max_duration_s``.

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
    ) -> ProcessorStats:
        if self.state is ProcessorState.CLOSED:
            raise ClosedError("Processor.run() after close()")
        self._use(handler, batch_handler)
        deadline = None if max_duration_s is None else time.monotonic() + max_duration_s
        with sigterm_stops(self.stop, handle_sigterm):
            self.state = ProcessorState.RUNNING
            self._loop(deadline)
        return self.stats

    def _use(self, handler: Handler | None, batch_handler: BatchHandler | None) -> None:
        """Take the handler of this run (or keep the one the deprecated constructor got).

        Raises:
            ConfigurationError: No handler at all, or one here and one in the constructor.
        """
        given = handler is not None or batch_handler is not None
        kept = self._handler is not None or self._batch_handler is not None
        if given and kept:
            raise ConfigurationError(
                "handler: given to both Processor() and run(); give it to run() only",
                field="handler",
            )
        if not given and not kept:
            raise ConfigurationError(
                "handler: give the handler to run(handler) (or run_batch(handler))",
                field="handler",
            )
        if given:
            self._handler, self._batch_handler = handler, batch_handler

    def _loop(self, deadline: float | None) -> None:
        try:
            self._start()
            while not self._stop.is_set():
                if deadline is not None and time.monotonic() >= deadline:
                    break
                self._step()
            self.state = ProcessorState.STOPPING
            self._commit_or_recover()
        except BaseException as exc:
            self._abort_open(exc)
            raise
        finally:
            self.close()

    def _abort_open(self, cause: BaseException) -> None:
        """Leaving on an exception (a cancellation too): abort the open transaction now.

        Closing alone would revoke the partitions, and the revoke commits the open
        transaction: an exception raised between two outputs of one record would commit half
        of its outputs without its offset. An abort is right whatever the exception was.
        """
        if self.guarantee is not _EOS or not self._txn.open or self._txn.stuck:
            return
        bound = min(self._timeout_s, 5.0)
        # librdkafka #4849: an abort sent while the transaction's AddPartitionsToTxn is still
        # in flight (records produced a moment ago) is refused by the broker with a fatal
        # INVALID_TXN_STATE; once the records are acknowledged, their partitions are in it
        with contextlib.suppress(SdkError):  # a failed record: the abort is still right
            self._txn.flush("flush before the abort on the way out", timeout=bound)
        try:
            self._txn.abort(cause, timeout=bound, attempts=1)
        except SdkError as exc:  # fenced or broken: the next epoch aborts it
            self.stats.note(f"abort on the way out failed ({exc}); the next epoch aborts it")
            return
        self.stats.aborts += 1
        self.stats.note(f"open transaction aborted on the way out ({type(cause).__name__})")

    def _start(self) -> None:
        if self._verify_cluster:
            from sdk.doctor import verify  # lazy: the admin client only when asked for

            verify(self.profile, self.topics)
        side = self.profile.consumer
        if side.group_protocol == "consumer":  # no KIP-848 (3.9): refused by name, not a hang
            from sdk.doctor import CONSUMER_PROTOCOL, require_broker

            require_broker(CONSUMER_PROTOCOL, side.bootstrap_servers, side.security, side.extras)
        config: dict[str, Any] = dict(side.render())
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
        config["logger"] = BrokerContact(config)  # librdkafka's log, repeats collapsed
        self._consumer = self._consumer_factory(config)
        # exactly_once: init_transactions fences older epochs first; before it (every
        # guarantee) a broker must answer: BrokerUnreachableError names the address if none
        # does, and a stop request (Ctrl-C) ends the wait
        if not self._txn.start(stopped=self._stop.is_set):
            return
        self._consumer.subscribe(
            self.topics,
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )

    # ---------------------------------------------------------------- the loop
    def _step(self) -> None:
        batch = consume_ready(self._consumer, self.profile.consumer.batch_size, self._wait_s())
        self._raise_callback_error()
        records = [msg for msg in batch if msg.error() is None]
        if len(records) < len(batch):  # events (EOF, transient errors): only fatal ones stop
            for msg in batch:
                err = msg.error()
                if err is not None and err.fatal():
                    raise from_kafka_error(err, context="consume")
        if records:
            if self.guarantee is Guarantee.AT_MOST_ONCE:
                records = commit_before_handling(
                    self._consumer,
                    records,
                    assigned_as=self._member,
                    stats=self.stats,
                    marks=self._handled_marks,
                    telemetry=self._tel,
                    on_retry=counting(self.stats, self._tel),
                    committed_timeout_s=self._timeout_s,
                )
                if not records:
                    return  # not handled: another member may own these partitions now
                self._progress.commit((m.topic(), m.partition(), m.offset() + 1) for m in records)
            if self._before_handle is not None:
                self._before_handle(records)
            self._handle(records)
        if self._due():
            self._commit_or_recover()

    def _wait_s(self) -> float:
        """How long a poll may wait: never past when the pending records' commit is due.

        A read_committed reader sees them only after that commit.
        """
        if self._pending == 0:
            return self._poll_timeout
        due_in = self._last_commit + self.profile.commit_interval_ms / 1000.0 - time.monotonic()
        return min(self._poll_timeout, max(due_in, 0.0))

    def _due(self) -> bool:
        if self._pending == 0:
            return False
        if self._pending >= self.profile.max_records_per_transaction:
            return True
        return (time.monotonic() - self._last_commit) * 1000 >= self.profile.commit_interval_ms

    # ---------------------------------------------------------------- commits
    def _offsets(self, keys: Iterable[tuple[str, int]] | None = None) -> list[TopicPartition]:
        items = (
            self._positions.items()
            if keys is None
            else ((k, self._positions[k]) for k in keys if k in self._positions)
        )
        return [TopicPartition(t, p, off) for (t, p), off in sorted(items)]

    def _commit_or_recover(self) -> bool:
        """Commit the pending work; on failure run the named recovery path. True if committed."""
        if self._consumer is None:
            return False
        if self.guarantee is _EOS:
            if not self._txn.open:
                self._reset_pending()
                return True
            offsets = self._offsets()
            try:
                self._txn.commit(offsets, self._consumer.consumer_group_metadata())
            except KafkaClientError as exc:
                self._recover(exc)
                return False
            self.stats.commits += 1
            self._progress.commit((tp.topic, tp.partition, tp.offset) for tp in offsets)
            self._reset_pending()
            return True
        if self.guarantee is _ALO and self._pending:
            try:  # outputs acknowledged first: only then may the input offsets move
                self._txn.flush("flush (at_least_once)")
            except KafkaTimeoutError as exc:
                raise KafkaTimeoutError(
                    f"flush: at_least_once flush left records unacknowledged ({exc})",
                    kafka_error=exc.kafka_error,
                ) from exc
            offsets = self._offsets()
            if offsets:
                call_kafka(
                    lambda: self._consumer.store_offsets(offsets=offsets),
                    context="store_offsets",
                    commit=True,
                    on_retry=counting(self.stats, self._tel),
                )
            self.stats.commits += 1
            self._progress.commit((tp.topic, tp.partition, tp.offset) for tp in offsets)
        self._reset_pending()
        return True

    def _reset_pending(self) -> None:
        self._positions.clear()
        self._pending = 0
        self._last_commit = time.monotonic()

    # ---------------------------------------------------------------- recovery paths
    def _recover(self, exc: KafkaClientError) -> None:
        """Run the session's one recovery decision, then rewind (see docs/processor.md).

        Raises:
            ProducerFencedError: Fenced/fatal with on_fenced="raise".
        """
        self._txn.recover(exc, on_fenced=self._on_fenced)
        self._rewind()

    def _abort_and_rewind(self, cause: BaseException | None = None) -> None:
        self._txn.abort_or_recreate(cause, on_fenced=self._on_fenced)
        self._rewind()

    def _rewind(self) -> None:
        """Seek every assigned partition back to its committed offset (no rebalance wait)."""
        self._reset_pending()
        rewind_to_committed(
            self._consumer,
            latest=self.profile.consumer.auto_offset_reset == "latest",
            stats=self.stats,
            timeout_s=self._timeout_s,
            telemetry=self._tel,
        )

    # ---------------------------------------------------------------- rebalance callbacks
    def _on_assign(self, consumer: ConsumerClient, partitions: list[TopicPartition]) -> None:
        self._member = member_id(consumer)  # at_most_once: handle only as this member
        if self.guarantee is Guarantee.AT_MOST_ONCE:  # nothing below the committed offset
            self._handled_marks.assigned(partitions)
        self.stats.note(f"assigned {len(partitions)} partitions")
        self._tel.rebalance("assigned", len(partitions))
        self._progress.rebalanced("assigned", partitions)

    def _on_revoke(self, consumer: ConsumerClient, partitions: list[TopicPartition]) -> None:
        """Commit (or abort and rewind) the in-flight work before the partitions go."""
        self.stats.revoked += 1
        self._tel.rebalance("revoked", len(partitions))
        self._handled_marks.released(partitions)
        try:
            self._commit_or_recover()
        except BaseException as exc:  # surfaced by the loop after consume() returns
            self._callback_error = exc
        self._reset_pending()
        self._progress.rebalanced("revoked", partitions)

    def _on_lost(self, consumer: ConsumerClient, partitions: list[TopicPartition]) -> None:
        """Partitions were lost (session expired): another member may own them; abort."""
        self.stats.lost += 1
        self._tel.rebalance("lost", len(partitions))
        self._handled_marks.released(partitions)
        if self.guarantee is _EOS and self._txn.open:
            try:  # never raises a fence here: a lost member's epoch may well be stale
                self._txn.abort_or_recreate(on_fenced="recreate")
            except BaseException as exc:  # the new client's init failed: the loop raises it
                self._callback_error = exc
        self._reset_pending()
        self._progress.rebalanced("lost", partitions)

    def _raise_callback_error(self) -> None:
        if self._callback_error is not None:
            exc, self._callback_error = self._callback_error, None
            raise exc
