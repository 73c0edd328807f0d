"""Kafka calls of the processor: retried while retriable (tenacity), translated once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from tenacity import (
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    stop_after_delay,
    stop_all,
    wait_exponential,
)

from sdk._membership import REBALANCE_CODES, next_offsets, rewind, still_member
from sdk.errors import (
    RETRY_FOR_S,
    ConfigurationError,
    KafkaClientError,
    from_kafka_error,
    is_transient,
)
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

_ABANDONED: list[Any] = []
"""Producers whose call never returned: kept referenced, because destroying a librdkafka
handle waits for its threads and would hang the caller the guard just freed."""

STALL_GRACE_S = 5.0
"""Extra seconds a bounded call gets beyond its own timeout before it counts as stuck."""


class CallStuckError(Exception):
    """A librdkafka call did not return within its own timeout plus the grace."""


def bounded(fn: Callable[[], T], limit_s: float, *, name: str) -> T:
    """Run ``fn`` in a helper thread and wait at most ``limit_s`` seconds for it.

    librdkafka's ``send_offsets_to_transaction`` can ignore its timeout and block for good when
    the group coordinator moves (librdkafka issues #5456 and #5511, open for the 2.16 we use).
    A blocked call would freeze the processor while it holds its partitions; bounding it turns
    the hang into an error the recovery path handles (a new producer epoch fences the stuck
    one).

    Raises:
        CallStuckError: ``fn`` had not returned after ``limit_s`` seconds (it keeps running).
        BaseException: Whatever ``fn`` raised.
    """
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name=f"kafka-call-{name}", daemon=True).start()
    if not done.wait(limit_s):
        raise CallStuckError(f"{name} did not return within {limit_s:g}s")
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]


def _retriable(exc: BaseException) -> bool:
    from confluent_kafka import KafkaException

    if not isinstance(exc, KafkaException) or not exc.args:
        return False
    return is_transient(exc.args[0])


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
        attempts: Attempts before the last error is raised (with more than one, retries go on
            for at least :data:`sdk.errors.RETRY_FOR_S` seconds too).
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

    stop = (
        stop_after_attempt(1)
        if attempts <= 1
        else stop_all(stop_after_attempt(attempts), stop_after_delay(RETRY_FOR_S))
    )
    try:
        for attempt in Retrying(
            retry=retry_if_exception(_retriable),
            stop=stop,
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
        self._stuck = False

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
        if offsets:  # step 2, bounded: librdkafka #5456/#5511 can ignore the timeout
            context = "commit step 2 (send_offsets_to_transaction)"
            limit = self._timeout + max(STALL_GRACE_S, self._timeout)
            try:
                call_kafka(
                    lambda: bounded(
                        lambda: producer.send_offsets_to_transaction(
                            offsets, group_metadata, self._timeout
                        ),
                        limit,
                        name="send_offsets_to_transaction",
                    ),
                    context=context,
                    stats=self._stats,
                    transactional=True,
                    telemetry=self._tel,
                )
            except CallStuckError as exc:
                self._stuck = True
                self._stats.stalled_calls += 1
                self._tel.safeguard("stalled_call", f"{context}: {exc}; producer abandoned")
                raise from_kafka_error(
                    KafkaError(
                        KafkaError._TIMED_OUT,
                        f"no answer {limit:g}s after a call with a {self._timeout:g}s timeout "
                        "(librdkafka #5456/#5511); the producer is abandoned and a new epoch "
                        "fences it",
                    ),
                    context=context,
                    transactional=True,
                ) from exc
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
        if self.producer is not None and self._stuck:
            _ABANDONED.append(self.producer)  # a call is still blocked in it: never destroy
        elif self.producer is not None:
            try:
                self.producer.purge()
                self.producer.flush(0)
            except Exception:
                pass
        self.producer = None
        self._stuck = False
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
    consumer: Any,
    records: list[Any],
    stats: ProcessorStats,
    telemetry: Telemetry | None,
    assigned_as: str | None = "-",
) -> bool:
    """at_most_once: commit the positions after ``records`` synchronously, before the handler.

    The batch may be handled only if the commit was accepted for the member that received the
    assignment (``assigned_as``, see :mod:`sdk._membership`): with the group session lost
    before or after the commit, or the commit refused by a rebalance, the batch is not handled
    and its partitions are rewound to its first offsets (their owner reads it again).

    Returns:
        True if the batch may be handled.

    Raises:
        KafkaClientError: The commit failed after retries (other than by a rebalance).
    """
    offsets = next_offsets(records)
    context = "commit (at_most_once, before handling)"

    def refused(why: str) -> bool:
        stats.commit_refused += 1
        stats.note(f"{context}: {why}; batch not handled")
        if telemetry is not None:
            telemetry.safeguard("unowned_batch", f"{context}: {why}; batch not handled")
        rewind(consumer, records)
        return False

    if not still_member(consumer, assigned_as):
        return refused("group session lost, commit not sent")
    try:
        call_kafka(
            lambda: consumer.commit(offsets=offsets, asynchronous=False),
            context=context,
            stats=stats,
            transactional=False,
            telemetry=telemetry,
        )
    except KafkaClientError as exc:
        if exc.code not in REBALANCE_CODES:
            raise
        return refused(str(exc))
    if not still_member(consumer, assigned_as):
        return refused("group session lost during the commit")
    stats.commits += 1
    return True
