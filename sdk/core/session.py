"""The transactional session: the one place that drives Kafka transactions.

The shape of franz-go's ``GroupTransactSession``: the session *holds* one SDK
:class:`~sdk.producer.Producer` (so every record goes through its partitioner, serializers and
bounded full-queue wait) and adds the transaction steps around it. The Processor, the Spark
batch task, the Spark streaming sink and the Producer's own public transaction methods all use
it; nothing else calls confluent-kafka's transactional API.

A transaction commits in numbered steps (docs/processor.md, docs/architecture.md):

1. ``send_offsets_to_transaction(offsets, group_metadata)``: the input positions join the
   transaction (KIP-447: the group metadata lets the coordinator fence a zombie whose
   generation is stale); bounded, because librdkafka can ignore its timeout (#5456/#5511).
   It goes first so that its round trips to the coordinators overlap the acknowledgements of
   the transaction's last outputs, as a hand-written loop's does (issue #16: flushing first
   made the two waits add up); the order does not matter to the outcome, since nothing of the
   transaction is visible before step 3;
2. flush the producer: every output record of the transaction is acknowledged (a failed one
   makes the transaction abortable; records left after the call timeout make it ambiguous);
3. ``commit_transaction()``: outputs and offsets become visible atomically.

A failed call is routed by :meth:`TransactionSession.recover` (the one decision,
:func:`sdk.core.recovery.decide`): abort, or recreate the client with the same
``transactional.id`` so that ``init_transactions()`` bumps the epoch and fences whatever the
old one still has in flight.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from sdk._client import ProducerClient, call_kafka, timeout_error, translating
from sdk.core.records import OutputRecord, TransactionStats
from sdk.core.recovery import Recovery, decide
from sdk.errors import (
    AmbiguousTransactionError,
    DeliveryError,
    KafkaClientError,
    ProducerFencedError,
    TransactionAbortableError,
    from_kafka_error,
)
from sdk.observability import Outcome, Telemetry, TransactionSpan

if TYPE_CHECKING:
    from sdk.producer import Producer

__all__ = ["STALL_GRACE_S", "CallStuckError", "TransactionSession", "bounded"]

T = TypeVar("T")

_ABANDONED: list[ProducerClient] = []
"""Clients whose call never returned: kept referenced, because destroying a librdkafka handle
waits for its threads and would hang the caller the bound just freed."""

STALL_GRACE_S = 5.0
"""Extra seconds a bounded call gets beyond its own timeout before it counts as stuck."""


class CallStuckError(Exception):
    """A librdkafka call did not return within its own timeout plus the grace."""


def bounded(fn: Callable[[], T], limit_s: float, *, name: str) -> T:
    """Run ``fn`` in a helper thread and wait at most ``limit_s`` seconds for it.

    librdkafka's ``send_offsets_to_transaction`` can ignore its timeout and block for good when
    the group coordinator moves (librdkafka issues #5456 and #5511, open for the 2.16 we use).
    A blocked call would freeze the loop while it holds its partitions; bounding it turns the
    hang into an ambiguous outcome (a new producer epoch fences the stuck one).

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


class TransactionSession:
    """Begin / produce / commit / abort / recreate over one SDK Producer.

    Args:
        producer: The Producer it holds (its profile decides the guarantee; for exactly_once
            it must have a concrete ``transactional.id``). The session registers itself as the
            producer's session, so the Producer's own transaction methods go through it too.
        stats: Counters to update (a :class:`~sdk.processor.ProcessorStats` is one).
        telemetry: Span per transaction, retry and safeguard metrics (None: none).
    """

    def __init__(
        self,
        producer: Producer,
        *,
        stats: TransactionStats | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        self.producer = producer
        self.stats = stats if stats is not None else TransactionStats()
        self._tel = telemetry
        profile = producer.profile
        self.transactional = producer.transactional
        self.transactional_id = str(producer.config.get("transactional.id", ""))
        self.transaction_timeout_ms = profile.transaction_timeout_ms
        self.timeout_s = profile.transaction_call_timeout_ms / 1000.0
        """Timeout of each transactional call (``transaction_call_timeout_ms``)."""
        # step 2 (flush) waits as long as a record may live: librdkafka resolves every queued record
        # (delivered or failed) within message.timeout.ms, capped at the transaction timeout
        self.flush_timeout_s = int(producer.config.get("message.timeout.ms", 0)) / 1000.0 or (
            self.timeout_s
        )
        self.open = False
        self.opened_at = 0.0
        self.span: TransactionSpan | None = None
        self.initialized = False
        self.failures_in_a_row = 0
        """Recoveries since the last commit (a front end may give up after too many)."""
        self._stuck = False
        producer._session = self

    # ------------------------------------------------------------------ calls
    def _call(self, fn: Callable[[], T], context: str, *, attempts: int = 5) -> T:
        def retried(name: str) -> None:
            self.stats.retries += 1
            if self._tel is not None:
                self._tel.retry(name)

        return call_kafka(
            fn,
            context=context,
            transactional=self.transactional,
            attempts=attempts,
            on_retry=retried,
        )

    @property
    def stuck(self) -> bool:
        """A call ignored its timeout and may still be blocked in the client: do not call it."""
        return self._stuck

    def _client(self) -> ProducerClient:
        client: ProducerClient = self.producer._ensure_client()
        return client

    # ------------------------------------------------------------------ lifecycle
    def start(self, timeout: float | None = None) -> None:
        """Create the client and run ``init_transactions()`` (fences older epochs).

        Raises:
            KafkaClientError: init_transactions failed after retries.
        """
        client = self._client()
        if self.transactional:
            t = self.timeout_s if timeout is None else timeout
            self._call(lambda: client.init_transactions(t), "init_transactions")
            self.initialized = True
        self.open = False

    def begin(self) -> None:
        """Begin a transaction unless one is open (initializing transactions first if needed).

        Raises:
            KafkaClientError: begin_transaction failed.
        """
        if self.open:
            return
        if not self.initialized:
            self.start()
        client = self._client()
        self._call(client.begin_transaction, "begin_transaction")
        self.open = True
        self.opened_at = time.monotonic()
        if self._tel is not None:
            self.span = self._tel.start_transaction(self.transactional_id)

    def produce(self, out: OutputRecord) -> None:
        """Queue one output record through the Producer (partitioner, bounded queue wait).

        Raises:
            KafkaClientError: The producer refused it (TransactionAbortableError inside a
                transaction unless fenced or fatal); the record is on ``.record``.
        """
        self.producer._enqueue_output(out, self.span)

    def emitter(self) -> Callable[[OutputRecord], None]:
        """A function queuing one output on the hot path (call :meth:`serve` once per batch).

        Valid until the client or the transaction changes: ask again after :meth:`begin` or a
        recovery. It raises KafkaClientError and counts each output on the transaction span,
        as :meth:`produce` does.
        """
        return self.producer._output_emitter(self.span)

    def serve(self) -> None:
        """Serve delivery reports and client events (once per polled batch).

        Raises:
            KafkaClientError: A fatal client error (fenced: ProducerFencedError).
        """
        self.producer._serve("serve delivery reports")

    def flush(self, context: str = "commit step 2 (flush)", timeout: float | None = None) -> None:
        """Step 2: wait until every queued record is acknowledged or failed.

        Args:
            context: Names the step in errors.
            timeout: Seconds to wait (default: ``message.timeout.ms`` plus a margin).

        Raises:
            AmbiguousTransactionError: Records left after ``message.timeout.ms``
                (KafkaTimeoutError outside a transaction).
            TransactionAbortableError: A record of the transaction failed (DeliveryError
                outside a transaction).
        """
        client = self._client()
        t = self.flush_timeout_s if timeout is None else timeout
        remaining = self._call(lambda: client.flush(t), context, attempts=1)
        if remaining:
            raise from_kafka_error(
                timeout_error(f"{remaining} records unacknowledged"),
                context=context,
                transactional=self.transactional,
            )
        failures = self.producer._take_failures()
        if not failures:
            return
        first = failures[0]
        cls = TransactionAbortableError if self.transactional else DeliveryError
        error = cls(
            f"{context}: {len(failures)} record(s) failed delivery; first: {first}",
            kafka_error=first.kafka_error,
            record=first.record,
        )
        if isinstance(error, DeliveryError):
            error.failures = failures
        raise error

    def send_offsets(self, offsets: Sequence[Any], group_metadata: Any, timeout: float) -> None:
        """Step 1: the input positions join the open transaction, bounded against #5456.

        Raises:
            AmbiguousTransactionError: The call did not return within its bound; the client
                is abandoned (never destroyed) and the recovery recreates it.
            KafkaClientError: The call failed (TransactionAbortableError for a stale member).
        """
        client = self._client()
        context = "commit step 1 (send_offsets_to_transaction)"
        limit = timeout + max(STALL_GRACE_S, timeout)
        try:
            self._call(
                lambda: bounded(
                    lambda: client.send_offsets_to_transaction(
                        list(offsets), group_metadata, timeout
                    ),
                    limit,
                    name="send_offsets_to_transaction",
                ),
                context,
            )
        except CallStuckError as exc:
            self._stuck = True
            self.stats.stalled_calls += 1
            if self._tel is not None:
                self._tel.safeguard("stalled_call", f"{context}: {exc}; producer abandoned")
            raise from_kafka_error(
                timeout_error(
                    f"no answer {limit:g}s after a call with a {timeout:g}s timeout "
                    "(librdkafka #5456/#5511); the producer is abandoned and a new epoch "
                    "fences it"
                ),
                context=context,
                transactional=True,
            ) from exc

    def commit_only(self, timeout: float | None = None) -> None:
        """Step 3: ``commit_transaction()`` (librdkafka flushes what is still queued first).

        Raises:
            KafkaClientError: The commit failed (the subclass tells the recovery path).
        """
        client = self._client()
        t = self.timeout_s if timeout is None else timeout
        self._call(lambda: client.commit_transaction(t), "commit step 3 (commit_transaction)")
        self._committed()

    def commit(self, offsets: Sequence[Any], group_metadata: Any) -> None:
        """Commit the open transaction in the numbered steps of the module docstring.

        Args:
            offsets: ``TopicPartition`` objects with the next offset to read (may be empty).
            group_metadata: ``consumer.consumer_group_metadata()`` of the consuming member.

        Raises:
            KafkaClientError: A step failed (the subclass tells :meth:`recover`).
        """
        if offsets:
            self.send_offsets(offsets, group_metadata, self.timeout_s)  # 1
        self.flush()  # 2
        self.commit_only()  # 3

    def _committed(self) -> None:
        self.open = False
        self.failures_in_a_row = 0
        self._end_span("committed")

    def abort(
        self, cause: BaseException | None = None, timeout: float | None = None, attempts: int = 5
    ) -> None:
        """Abort the open transaction (purges unsent records; failed deliveries forgotten).

        Args:
            cause: The error that made the abort necessary (recorded on the span).
            timeout: Seconds for the call (default: the call timeout).
            attempts: Attempts while the error is transient (1: no retry, e.g. on the way out).

        Raises:
            KafkaClientError: abort failed (AmbiguousTransactionError on a timeout).
        """
        client = self._client()
        t = self.timeout_s if timeout is None else timeout
        self._call(lambda: client.abort_transaction(t), "abort_transaction", attempts=attempts)
        self.producer._take_failures()  # the abort reports them; they are not delivered
        self.open = False
        self._end_span("aborted", cause)

    def recreate(self, outcome: Outcome = "aborted", cause: BaseException | None = None) -> None:
        """Drop the client and start a new one with the same transactional.id (new epoch).

        Args:
            outcome: What became of the open transaction: ``aborted`` (the new epoch aborts
                it) or ``unknown`` (an ambiguous commit the coordinator may have completed).
            cause: The error that led here (recorded on the transaction span).

        Raises:
            KafkaClientError: The new client's init_transactions failed.
        """
        self.close(outcome, cause)
        self.stats.producer_recreations += 1
        self.stats.note("producer recreated")
        self.start()

    def close(self, outcome: Outcome = "aborted", cause: BaseException | None = None) -> None:
        """Drop the client without waiting (an open transaction is aborted by the next epoch).

        Args:
            outcome: Outcome recorded for a transaction still open (its span is ended).
            cause: The error that led here, if any.
        """
        self._end_span(outcome, cause)
        client = self.producer._drop_client()
        if client is not None and self._stuck:
            _ABANDONED.append(client)  # a call is still blocked in it: never destroy
        elif client is not None:
            # a fenced or broken client has nothing to give back
            with suppress(KafkaClientError), translating("close"):
                client.purge()
                client.flush(0)
            # flush(0) served the purged records' _PURGE_QUEUE reports into the failures: they
            # belong to the dropped transaction, not to the next one
            self.producer._take_failures()
        self._stuck = False
        self.open = False
        self.initialized = False

    def _end_span(self, outcome: Outcome, cause: BaseException | None = None) -> None:
        span, self.span = self.span, None
        if span is not None:
            span.end(outcome, error=cause)

    # ------------------------------------------------------------------ the one decision
    def recover(
        self, error: KafkaClientError, *, on_fenced: Literal["raise", "recreate"] = "raise"
    ) -> Recovery:
        """Route a failed transactional call to its path (:func:`sdk.core.recovery.decide`).

        The caller rewinds its input to the committed offsets afterwards: whatever path ran,
        the open transaction is gone.

        Args:
            error: The translated error of the failed call.
            on_fenced: ``raise`` closes the client and re-raises a fenced/fatal error;
                ``recreate`` makes a new client and goes on.

        Returns:
            The path taken.

        Raises:
            ProducerFencedError: Fenced/fatal with ``on_fenced="raise"`` (or the abort
                failed fatally).
            KafkaClientError: The new client's init_transactions failed.
        """
        age_ms = (time.monotonic() - self.opened_at) * 1000 if self.open else 0.0
        self.failures_in_a_row += 1
        path = decide(
            error,
            transaction_age_ms=age_ms,
            transaction_timeout_ms=self.transaction_timeout_ms,
            failures_in_a_row=self.failures_in_a_row,
        )
        self.stats.note(f"recover ({path.value}) from {type(error).__name__}: {error}")
        if path in (Recovery.FENCED, Recovery.FENCED_TIMED_OUT):
            self.stats.fenced += 1
        if path in (Recovery.TIMED_OUT, Recovery.FENCED_TIMED_OUT):
            self.stats.transaction_timeouts += 1
        if path is Recovery.AMBIGUOUS:
            self.stats.ambiguous += 1
        if path is Recovery.FENCED and on_fenced == "raise":
            self.close(cause=error)
            raise error
        if path is Recovery.ABORT:
            self.abort_or_recreate(error, on_fenced=on_fenced)
            if error.txn_requires_abort:
                self.stats.abortable_recoveries += 1
        else:
            self.stats.aborts += 1
            self.recreate("unknown" if path is Recovery.AMBIGUOUS else "aborted", error)
        return path

    def abort_or_recreate(
        self,
        cause: BaseException | None = None,
        *,
        on_fenced: Literal["raise", "recreate"] = "raise",
    ) -> None:
        """Abort the open transaction; if the abort fails, recreate the client instead.

        A failed abort is counted by its kind like any failed call (``ambiguous`` for an
        unknown outcome, ``fenced`` for a fenced or fatal client).

        Raises:
            KafkaClientError: The abort failed fatally with ``on_fenced="raise"``, or the new
                client's init_transactions failed.
        """
        try:
            self.abort(cause)
            self.stats.aborts += 1
            return
        except KafkaClientError as exc:
            self.stats.note(f"abort failed: {exc}")
            if isinstance(exc, AmbiguousTransactionError):
                self.stats.ambiguous += 1
            elif exc.fatal or isinstance(exc, ProducerFencedError):
                self.stats.fenced += 1
                if on_fenced == "raise":
                    self.close(cause=exc)
                    raise
            self.stats.aborts += 1
            self.recreate(cause=exc)
