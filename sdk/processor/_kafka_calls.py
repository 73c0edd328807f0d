"""Kafka calls of the processor: retried while retriable (tenacity), translated once."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from sdk.errors import ConfigurationError, from_kafka_error
from sdk.observability import Outcome, Telemetry, TransactionSpan
from sdk.processor._records import ProcessorStats
from sdk.profiles import Guarantee, ProcessingProfile

__all__ = [
    "TransactionalProducer",
    "call_kafka",
    "commit_before_handling",
    "default_consumer",
    "default_producer",
    "producer_config",
    "rewind_to_committed",
    "timeout_error",
]

T = TypeVar("T")


def _retriable(exc: BaseException) -> bool:
    from confluent_kafka import KafkaException

    if not isinstance(exc, KafkaException) or not exc.args:
        return False
    err = exc.args[0]
    retriable = getattr(err, "retriable", None)
    fatal = getattr(err, "fatal", None)
    abort = getattr(err, "txn_requires_abort", None)
    return bool(
        callable(retriable)
        and retriable()
        and not (callable(fatal) and fatal())
        and not (callable(abort) and abort())
    )


def call_kafka(
    fn: Callable[[], T],
    *,
    context: str,
    stats: ProcessorStats,
    transactional: bool,
    attempts: int = 5,
    telemetry: Telemetry | None = None,
) -> T:
    """Run one Kafka call; retry it while librdkafka says the error is retriable.

    Args:
        fn: The call, e.g. ``lambda: producer.commit_transaction(10)``.
        context: Name of the call, starts the error message.
        stats: Counters (``retries`` is incremented per retry).
        transactional: Whether the call is a transactional producer call.
        attempts: Attempts in total before the last error is raised.
        telemetry: Counts each retry as ``kafka_semantics.retries{operation=context}``.

    Returns:
        What ``fn`` returned.

    Raises:
        KafkaClientError: The translated error (a subclass per kind) once retries are spent or
            the error is not retriable.
    """
    from confluent_kafka import KafkaException

    def before_sleep(_: Any) -> None:
        stats.retries += 1
        if telemetry is not None:
            telemetry.retry(context)

    try:
        for attempt in Retrying(
            retry=retry_if_exception(_retriable),
            stop=stop_after_attempt(attempts),
            wait=wait_exponential(multiplier=0.05, max=2.0),
            before_sleep=before_sleep,
            reraise=True,
        ):
            with attempt:
                return fn()
    except KafkaException as exc:
        raise from_kafka_error(exc.args[0], context=context, transactional=transactional) from exc
    raise AssertionError("unreachable")  # pragma: no cover


class TransactionalProducer:
    """One transactional ``confluent_kafka.Producer`` that can be recreated (new epoch).

    The producer is created lazily in :meth:`start`; :meth:`recreate` closes it and makes a new
    one with the same ``transactional.id``, whose ``init_transactions()`` bumps the epoch, so the
    coordinator fences every request the old instance may still have in flight.

    Each transaction is a ``kafka.transaction`` span (:attr:`span`), begun by :meth:`begin` and
    ended by whichever of :meth:`commit`, :meth:`abort` or :meth:`close` finishes it.
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        factory: Callable[[dict[str, Any]], Any],
        stats: ProcessorStats,
        timeout_s: float,
        telemetry: Telemetry | None = None,
    ) -> None:
        self._config = dict(config)
        self._tel = telemetry or Telemetry.default()
        self.span: TransactionSpan | None = None
        self._factory = factory
        self._stats = stats
        self._timeout = timeout_s
        self.producer: Any = None
        self.open = False
        self.opened_at = 0.0

    def start(self) -> None:
        """Create the producer and run ``init_transactions()`` (fences older epochs).

        Raises:
            KafkaClientError: init_transactions failed after retries.
        """
        self.producer = self._factory(dict(self._config))
        producer = self.producer
        call_kafka(
            lambda: producer.init_transactions(self._timeout),
            context="init_transactions",
            stats=self._stats,
            transactional=True,
            telemetry=self._tel,
        )
        self.open = False

    def begin(self) -> None:
        """Begin a transaction unless one is open.

        Raises:
            KafkaClientError: begin_transaction failed.
        """
        if self.open:
            return
        producer = self.producer
        call_kafka(
            producer.begin_transaction,
            context="begin_transaction",
            stats=self._stats,
            transactional=True,
            telemetry=self._tel,
        )
        self.open = True
        self.opened_at = time.monotonic()
        self.span = self._tel.start_transaction(str(self._config.get("transactional.id", "")))

    def commit(self, offsets: list[Any], group_metadata: Any) -> None:
        """Commit the open transaction in numbered steps.

        1. flush the producer: every output record of the transaction is acknowledged;
        2. ``send_offsets_to_transaction(offsets, group_metadata)``: the input positions join the
           transaction (KIP-447: the group metadata lets the coordinator fence a zombie whose
           generation is stale);
        3. ``commit_transaction()``: outputs and offsets become visible atomically.

        Raises:
            KafkaClientError: A step failed (the subclass tells the recovery path).
        """
        from confluent_kafka import KafkaError

        producer = self.producer
        remaining = call_kafka(  # step 1
            lambda: producer.flush(self._timeout),
            context="commit step 1 (flush)",
            stats=self._stats,
            transactional=True,
            telemetry=self._tel,
            attempts=1,
        )
        if remaining:
            raise from_kafka_error(
                KafkaError(KafkaError._TIMED_OUT, f"{remaining} records unacknowledged"),
                context="commit step 1 (flush)",
                transactional=True,
            )
        if offsets:  # step 2
            call_kafka(
                lambda: producer.send_offsets_to_transaction(
                    offsets, group_metadata, self._timeout
                ),
                context="commit step 2 (send_offsets_to_transaction)",
                stats=self._stats,
                transactional=True,
                telemetry=self._tel,
            )
        call_kafka(  # step 3
            lambda: producer.commit_transaction(self._timeout),
            context="commit step 3 (commit_transaction)",
            stats=self._stats,
            transactional=True,
            telemetry=self._tel,
        )
        self.open = False
        self._end_span("committed")

    def abort(self, cause: BaseException | None = None) -> None:
        """Abort the open transaction (purges unsent records).

        Args:
            cause: The error that made the abort necessary (recorded on the span).

        Raises:
            KafkaClientError: abort failed (AmbiguousTransactionError on a timeout).
        """
        producer = self.producer
        call_kafka(
            lambda: producer.abort_transaction(self._timeout),
            context="abort_transaction",
            stats=self._stats,
            transactional=True,
            telemetry=self._tel,
        )
        self.open = False
        self._end_span("aborted", cause)

    def recreate(self, outcome: Outcome = "aborted", cause: BaseException | None = None) -> None:
        """Close this producer and start a new one with the same transactional.id.

        Args:
            outcome: What became of the open transaction: ``aborted`` (the new epoch aborts
                it) or ``unknown`` (an ambiguous commit the coordinator may have completed).
            cause: The error that led here (recorded on the transaction span).

        Raises:
            KafkaClientError: The new producer's init_transactions failed.
        """
        self.close(outcome, cause)
        self._stats.producer_recreations += 1
        self._stats.note("producer recreated")
        self.start()

    def close(self, outcome: Outcome = "aborted", cause: BaseException | None = None) -> None:
        """Drop the producer without waiting (an open transaction is aborted by the next epoch).

        Args:
            outcome: Outcome recorded for a transaction still open (its span is ended).
            cause: The error that led here, if any.
        """
        self._end_span(outcome, cause)
        if self.producer is not None:
            try:
                self.producer.purge()
                self.producer.flush(0)
            except Exception:
                pass
        self.producer = None
        self.open = False

    def _end_span(self, outcome: Outcome, cause: BaseException | None = None) -> None:
        if self.span is not None:
            self.span.end(outcome, error=cause)
            self.span = None


def default_producer(config: dict[str, Any]) -> Any:
    """Create a ``confluent_kafka.Producer`` (the default producer factory)."""
    from confluent_kafka import Producer

    return Producer(config)


def default_consumer(config: dict[str, Any]) -> Any:
    """Create a ``confluent_kafka.Consumer`` (the default consumer factory)."""
    from confluent_kafka import Consumer

    return Consumer(config)


def timeout_error(reason: str) -> Any:
    """Build a ``KafkaError(_TIMED_OUT)`` for a local timeout (e.g. flush left records)."""
    from confluent_kafka import KafkaError

    return KafkaError(KafkaError._TIMED_OUT, reason)


def producer_config(
    profile: ProcessingProfile, transactional_id: str | None, instance_id: str | None
) -> dict[str, Any]:
    """Render the processor's producer config (transactional.id for exactly_once).

    Raises:
        ConfigurationError: exactly_once with neither a transactional id nor an instance id.
    """
    p = profile.producer
    if profile.guarantee is not Guarantee.EXACTLY_ONCE:
        return dict(p.render())
    tid = transactional_id or p.transactional_id
    if tid is None:
        if not instance_id:
            raise ConfigurationError(
                "instance_id: the profile has only transactional_id_prefix; pass a stable "
                "instance_id (or transactional_id)",
                field="instance_id",
            )
        tid = f"{p.transactional_id_prefix}{instance_id}"
    config: dict[str, Any] = dict(p.render(transactional_id=tid))
    # librdkafka refuses message.timeout.ms > transaction.timeout.ms.
    config["message.timeout.ms"] = min(int(config["message.timeout.ms"]), p.transaction_timeout_ms)
    return config


def rewind_to_committed(
    consumer: Any,
    *,
    latest: bool,
    stats: ProcessorStats,
    timeout_s: float,
    telemetry: Telemetry | None = None,
) -> None:
    """Seek every assigned partition back to its committed offset (no rebalance wait).

    Args:
        consumer: The ``confluent_kafka.Consumer``.
        latest: Where a partition without a committed offset goes (auto.offset.reset=latest).
        stats: Counters (``rewinds``, ``retries``).
        timeout_s: Timeout of the ``committed()`` call.
        telemetry: Counts retries of the ``committed()`` call.

    Raises:
        KafkaClientError: ``committed()`` failed after retries.
    """
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END

    assignment = consumer.assignment()
    if not assignment:
        return
    committed = call_kafka(
        lambda: consumer.committed(assignment, timeout_s),
        context="committed",
        stats=stats,
        transactional=False,
        telemetry=telemetry,
    )
    fallback = OFFSET_END if latest else OFFSET_BEGINNING
    for tp in committed:
        if tp.offset < 0:
            tp.offset = fallback
        try:
            consumer.seek(tp)
        except Exception as exc:  # not yet fetching: re-assigning sets the position
            stats.note(f"seek {tp.topic}[{tp.partition}] failed ({exc}); reassigning")
            consumer.incremental_unassign([tp])
            consumer.incremental_assign([tp])
    stats.rewinds += 1


def commit_before_handling(
    consumer: Any, records: list[Any], stats: ProcessorStats, telemetry: Telemetry | None
) -> None:
    """at_most_once: commit the positions after ``records`` synchronously, before the handler.

    Raises:
        KafkaClientError: The commit failed after retries.
    """
    from confluent_kafka import TopicPartition

    last: dict[tuple[str, int], int] = {}
    for m in records:
        last[(m.topic(), m.partition())] = m.offset() + 1
    offsets = [TopicPartition(t, p, o) for (t, p), o in sorted(last.items())]
    call_kafka(
        lambda: consumer.commit(offsets=offsets, asynchronous=False),
        context="commit (at_most_once, before handling)",
        stats=stats,
        transactional=False,
        telemetry=telemetry,
    )
    stats.commits += 1
