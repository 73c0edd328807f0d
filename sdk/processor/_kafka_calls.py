"""Kafka calls of the processor: retried while retriable (tenacity), translated once."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from sdk.errors import from_kafka_error
from sdk.processor._records import ProcessorStats

__all__ = [
    "TransactionalProducer",
    "call_kafka",
    "default_consumer",
    "default_producer",
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
) -> T:
    """Run one Kafka call; retry it while librdkafka says the error is retriable.

    Args:
        fn: The call, e.g. ``lambda: producer.commit_transaction(10)``.
        context: Name of the call, starts the error message.
        stats: Counters (``retries`` is incremented per retry).
        transactional: Whether the call is a transactional producer call.
        attempts: Attempts in total before the last error is raised.

    Returns:
        What ``fn`` returned.

    Raises:
        KafkaClientError: The translated error (a subclass per kind) once retries are spent or
            the error is not retriable.
    """
    from confluent_kafka import KafkaException

    def before_sleep(_: Any) -> None:
        stats.retries += 1

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
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        factory: Callable[[dict[str, Any]], Any],
        stats: ProcessorStats,
        timeout_s: float,
    ) -> None:
        self._config = dict(config)
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
        )
        self.open = True
        self.opened_at = time.monotonic()

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
            )
        call_kafka(  # step 3
            lambda: producer.commit_transaction(self._timeout),
            context="commit step 3 (commit_transaction)",
            stats=self._stats,
            transactional=True,
        )
        self.open = False

    def abort(self) -> None:
        """Abort the open transaction (purges unsent records).

        Raises:
            KafkaClientError: abort failed (AmbiguousTransactionError on a timeout).
        """
        producer = self.producer
        call_kafka(
            lambda: producer.abort_transaction(self._timeout),
            context="abort_transaction",
            stats=self._stats,
            transactional=True,
        )
        self.open = False

    def recreate(self) -> None:
        """Close this producer and start a new one with the same transactional.id.

        Raises:
            KafkaClientError: The new producer's init_transactions failed.
        """
        self.close()
        self._stats.producer_recreations += 1
        self._stats.note("producer recreated")
        self.start()

    def close(self) -> None:
        """Drop the producer without waiting (an open transaction is aborted by the next epoch)."""
        if self.producer is not None:
            try:
                self.producer.purge()
                self.producer.flush(0)
            except Exception:
                pass
        self.producer = None
        self.open = False


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
