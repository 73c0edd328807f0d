"""The read-process-write Processor: one loop, three guarantees, every error path named."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal

from confluent_kafka import KafkaException

from sdk._membership import member_id
from sdk.errors import (
    AmbiguousTransactionError,
    ClosedError,
    ConfigurationError,
    HandlerError,
    KafkaClientError,
    ProducerFencedError,
    from_kafka_error,
)
from sdk.observability import Outcome, Telemetry, get_logger, redact
from sdk.processor._failure import HandlerRunner, dead_letter
from sdk.processor._kafka_calls import (
    TransactionalProducer,
    call_kafka,
    commit_before_handling,
    default_consumer,
    default_producer,
    producer_config,
    rewind_to_committed,
    timeout_error,
)
from sdk.processor._records import (
    BatchHandler,
    Handler,
    OutputRecord,
    ProcessorState,
    ProcessorStats,
)
from sdk.profiles import Guarantee, ProcessingProfile

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

    Args:
        profile: The processing profile (guarantee, consumer, producer, commit cadence).
        input_topics: Topics to subscribe to.
        handler: ``record -> iterable of OutputRecord`` (record: ``confluent_kafka.Message``).
        batch_handler: Alternative to ``handler``: ``list of records -> iterable``.
        transactional_id: Concrete transactional.id (overrides the profile's).
        instance_id: Stable id of this instance, appended to the profile's
            ``transactional_id_prefix``. It must survive restarts: a restarted instance with the
            same id fences its predecessor (``init_transactions``) and aborts its open
            transaction; a fresh random id would leave that transaction open until it times out,
            blocking read_committed readers of the output partitions.
        on_fenced: ``"raise"`` (default) closes the producer and raises ProducerFencedError;
            ``"recreate"`` makes a new producer (new epoch), rewinds and continues.
        poll_timeout_s: How long one consume() waits for records.
        producer_factory: Makes the producer from a librdkafka dict (tests pass fakes).
        consumer_factory: Makes the consumer from a librdkafka dict.
        telemetry: Spans/metrics hooks (default: :meth:`Telemetry.default`, a no-op until the
            application installs an OpenTelemetry SDK). See docs/observability.md.

    Raises:
        ConfigurationError: Neither or both handlers, or no transactional id for exactly_once.
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
        producer_factory: Callable[[dict[str, Any]], Any] = default_producer,
        consumer_factory: Callable[[dict[str, Any]], Any] = default_consumer,
        telemetry: Telemetry | None = None,
    ) -> None:
        if (handler is None) == (batch_handler is None):
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
        self._tel = tel = telemetry or Telemetry.default()
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
        self._member: str | None = None  # group member id that received the assignment
        self._failures_since_commit = 0
        pconfig: dict[str, Any] = dict(producer_config(profile, transactional_id, instance_id))
        self.transactional_id = pconfig.get("transactional.id")
        self._timeout_s = max(5.0, profile.producer.transaction_timeout_ms / 1000.0)
        self._txn = TransactionalProducer(
            pconfig,
            factory=producer_factory,
            stats=self.stats,
            timeout_s=self._timeout_s,
            telemetry=tel,
        )
        self._producer_factory = producer_factory

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
        if self._txn.producer is not None and not self._txn.open:
            with contextlib.suppress(KafkaException):  # a fenced producer has nothing to flush
                self._txn.producer.flush(self._timeout_s)
        self._txn.close()

    def run(self, *, max_seconds: float | None = None) -> ProcessorStats:
        """Run the loop until :meth:`stop` (or ``max_seconds``); commit and close on the way out.

        Returns:
            The counters.

        Raises:
            ClosedError: The processor was closed.
            ProducerFencedError: Fenced with ``on_fenced="raise"`` (or fatal producer error).
            HandlerError: The handler failed with ``failure.on_failure="stop"``.
            KafkaClientError: Another unrecoverable Kafka error.
        """
        if self.state is ProcessorState.CLOSED:
            raise ClosedError("Processor.run() after close()")
        self.state = ProcessorState.RUNNING
        deadline = None if max_seconds is None else time.monotonic() + max_seconds
        try:
            self._start()
            while not self._stop.is_set():
                if deadline is not None and time.monotonic() >= deadline:
                    break
                self._step()
            self.state = ProcessorState.STOPPING
            self._commit_or_recover()
        finally:
            self.close()
        return self.stats

    def _start(self) -> None:
        config: dict[str, Any] = dict(self.profile.consumer.render())
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
                "producer_config": redact(self._txn._config),
            },
        )
        self._consumer = self._consumer_factory(config)
        if self.guarantee is _EOS:
            self._txn.start()
        else:
            self._txn.producer = self._producer_factory(dict(self._txn._config))
        self._consumer.subscribe(
            self.topics,
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )

    # ---------------------------------------------------------------- the loop
    def _step(self) -> None:
        batch = self._consumer.consume(self.profile.consumer.batch_size, self._poll_timeout)
        self._raise_callback_error()
        records = []
        for msg in batch:
            err = msg.error()
            if err is None:
                records.append(msg)
            elif err.fatal():
                raise from_kafka_error(err, context="consume")
        if records:
            if self.guarantee is Guarantee.AT_MOST_ONCE and not commit_before_handling(
                self._consumer, records, self.stats, self._tel, self._member
            ):
                return  # not handled: another member may own these partitions now
            self._handle(records)
        if self._due():
            self._commit_or_recover()

    def _due(self) -> bool:
        if self._pending == 0:
            return False
        if self._pending >= self.profile.max_records_per_transaction:
            return True
        return (time.monotonic() - self._last_commit) * 1000 >= self.profile.commit_interval_ms

    def _handle(self, records: list[Any]) -> None:
        if self._batch_handler is not None:
            self._handle_unit(records, self._batch_handler, records)
            return
        handler = self._handler
        assert handler is not None
        for i, msg in enumerate(records):
            if not self._handle_unit(msg, handler, [msg]):
                return  # rewound: the rest of the batch is re-read
            if self._due() and i + 1 < len(records) and not self._commit_or_recover():
                return

    def _handle_unit(
        self, arg: Any, fn: Callable[[Any], Iterable[OutputRecord]], msgs: list[Any]
    ) -> bool:
        """Handle one record (or batch); return False if the transaction was rewound."""
        if self.guarantee is _EOS:
            try:
                self._txn.begin()
            except KafkaClientError as exc:
                self._recover(exc)
                return False
        with self._process_span(arg, msgs):
            try:
                outputs = self._runner.run(fn, arg)
            except HandlerError as exc:
                self.stats.handler_failures += 1
                failure = self.profile.consumer.failure
                if failure.on_failure == "stop" or failure.dlq_topic is None:
                    self.stats.note(f"handler failed, stopping: {exc}")
                    if self.guarantee is _EOS:
                        self._abort_and_rewind(count_recovery=False, cause=exc)
                    else:
                        self._commit_or_recover()
                    raise
                outputs = [dead_letter(m, failure.dlq_topic, exc) for m in msgs]
                self.stats.dead_lettered += len(msgs)
                cause = type(exc.__cause__ or exc).__name__
                for m in msgs:
                    self._tel.dead_lettered(m.topic(), failure.dlq_topic, error_type=cause)
            try:
                for out in outputs:
                    self._produce(out)
            except KafkaException as exc:
                # produce() refuses (_STATE) once a delivery failed in this transaction.
                err = from_kafka_error(
                    exc.args[0], context="produce", transactional=self.guarantee is _EOS
                )
                if self.guarantee is not _EOS:
                    raise err from exc
                if not (err.fatal or isinstance(err, ProducerFencedError)):
                    err.txn_requires_abort = True
                self._recover(err)
                return False
        for msg in msgs:
            self._positions[(msg.topic(), msg.partition())] = msg.offset() + 1
        self.stats.records_in += len(msgs)
        self._pending += len(msgs)
        if self._txn.span is not None:
            self._txn.span.add_input(len(msgs))
        return True

    def _process_span(self, arg: Any, msgs: list[Any]) -> AbstractContextManager[Any]:
        """``process <topic>`` per record, or one span per batch linking every record."""
        tx = self._txn.span
        if arg is msgs:
            return self._tel.batch_process_span(msgs, self._group, transaction=tx)
        m = msgs[0]
        return self._tel.process_span(
            m.topic(), m.partition(), m.offset(), m.key(), self._group, m.headers(), transaction=tx
        )

    def _produce(self, out: OutputRecord) -> None:
        """Produce one output inside a ``send <topic>`` span whose context goes in its headers."""
        producer = self._txn.producer
        kwargs: dict[str, Any] = {"value": out.value, "key": out.key}
        if out.partition is not None:
            kwargs["partition"] = out.partition
        with self._tel.send_span(out.topic, out.partition, out.key, tombstone=out.value is None):
            headers = self._tel.inject(out.headers)
            if headers or out.headers is not None:
                kwargs["headers"] = headers
            while True:
                try:
                    producer.produce(out.topic, **kwargs)
                    break
                except BufferError:
                    producer.poll(0.05)
        producer.poll(0)
        self.stats.records_out += 1
        if self._txn.span is not None:
            self._txn.span.add()

    # ---------------------------------------------------------------- commits
    def _offsets(self, keys: Iterable[tuple[str, int]] | None = None) -> list[Any]:
        from confluent_kafka import TopicPartition

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
            try:
                self._txn.commit(self._offsets(), self._consumer.consumer_group_metadata())
            except KafkaClientError as exc:
                self._recover(exc)
                return False
            self.stats.commits += 1
            self._failures_since_commit = 0
            self._reset_pending()
            return True
        if self.guarantee is _ALO and self._pending:
            producer = self._txn.producer
            if producer.flush(self._timeout_s):
                raise from_kafka_error(
                    timeout_error("at_least_once flush left records unacknowledged"),
                    context="flush",
                )
            offsets = self._offsets()
            if offsets:
                call_kafka(
                    lambda: self._consumer.store_offsets(offsets=offsets),
                    context="store_offsets",
                    stats=self.stats,
                    transactional=False,
                    telemetry=self._tel,
                )
            self.stats.commits += 1
        self._reset_pending()
        return True

    def _reset_pending(self) -> None:
        self._positions.clear()
        self._pending = 0
        self._last_commit = time.monotonic()

    # ---------------------------------------------------------------- recovery paths
    def _recover(self, exc: KafkaClientError) -> None:
        """Route a failed transactional call to its recovery path (see docs/processor.md).

        Raises:
            ProducerFencedError: Fenced/fatal with on_fenced="raise".
        """
        age_ms = (time.monotonic() - self._txn.opened_at) * 1000 if self._txn.open else 0.0
        timed_out = age_ms >= self.profile.producer.transaction_timeout_ms
        self.stats.note(f"recover from {type(exc).__name__}: {exc}")
        self._failures_since_commit += 1
        if timed_out:
            # transaction timeout: the coordinator aborted it and bumped the epoch.
            self.stats.transaction_timeouts += 1
            self._recreate_and_rewind(cause=exc)
        elif isinstance(exc, AmbiguousTransactionError):
            # ambiguous commit/abort: never reuse this producer (no KIP-890 part 2).
            self.stats.ambiguous += 1
            self._recreate_and_rewind("unknown", cause=exc)
        elif exc.fatal or (isinstance(exc, ProducerFencedError) and not exc.txn_requires_abort):
            self.stats.fenced += 1
            if self._on_fenced == "raise":
                self._txn.close(cause=exc)
                raise exc
            self._recreate_and_rewind(cause=exc)
        elif self._failures_since_commit > 1:
            # abortable again right after an abort: librdkafka can keep a sequence gap (e.g.
            # OUT_OF_ORDER_SEQUENCE_NUMBER after a refused record); a new epoch resets it.
            self._recreate_and_rewind(cause=exc)
        else:
            # abortable (txn_requires_abort) or another non-retriable error: abort + rewind.
            self._abort_and_rewind(count_recovery=exc.txn_requires_abort, cause=exc)

    def _abort_and_rewind(
        self, *, count_recovery: bool, cause: BaseException | None = None
    ) -> None:
        try:
            self._txn.abort(cause)
            self.stats.aborts += 1
        except KafkaClientError as exc:
            self.stats.note(f"abort failed: {exc}")
            if isinstance(exc, AmbiguousTransactionError):
                self.stats.ambiguous += 1
            elif exc.fatal and self._on_fenced == "raise":
                self.stats.fenced += 1
                self._txn.close(cause=exc)
                raise
            self._recreate_and_rewind(cause=exc)
            return
        if count_recovery:
            self.stats.abortable_recoveries += 1
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

    def _recreate_and_rewind(
        self, outcome: Outcome = "aborted", cause: BaseException | None = None
    ) -> None:
        self.stats.aborts += 1
        self._txn.recreate(outcome, cause)
        self._rewind()

    # ---------------------------------------------------------------- rebalance callbacks
    def _on_assign(self, consumer: Any, partitions: list[Any]) -> None:
        self._member = member_id(consumer)  # at_most_once: handle only as this member
        self.stats.note(f"assigned {len(partitions)} partitions")
        self._tel.rebalance("assigned", len(partitions))

    def _on_revoke(self, consumer: Any, partitions: list[Any]) -> None:
        """Commit (or abort and rewind) the in-flight work before the partitions go."""
        self.stats.revoked += 1
        self._tel.rebalance("revoked", len(partitions))
        try:
            self._commit_or_recover()
        except BaseException as exc:  # surfaced by the loop after consume() returns
            self._callback_error = exc
        self._reset_pending()

    def _on_lost(self, consumer: Any, partitions: list[Any]) -> None:
        """Partitions were lost (session expired): another member may own them; abort."""
        self.stats.lost += 1
        self._tel.rebalance("lost", len(partitions))
        if self.guarantee is _EOS and self._txn.open:
            try:
                self._txn.abort()
                self.stats.aborts += 1
            except KafkaClientError as exc:
                self.stats.note(f"abort on lost failed: {exc}; recreating")
                try:
                    self._txn.recreate()
                except BaseException as inner:
                    self._callback_error = inner
        self._reset_pending()

    def _raise_callback_error(self) -> None:
        if self._callback_error is not None:
            exc, self._callback_error = self._callback_error, None
            raise exc
