"""The transactional session: the one place that decides how a transaction commits and recovers.

The shape of franz-go's ``GroupTransactSession``: the session *holds* one SDK
:class:`~sdk.producer.Producer` (so every record goes through its partitioner, serializers and
bounded full-queue wait) and drives it through the one interface the Producer owns for this,
its :class:`~sdk.producer._transactions.TransactionalOutput` (the transactional calls, each
retried and translated at the seam, and a transaction's outputs). The Processor, the Spark
batch task and the Spark streaming sink use the session; the Producer does not know it.

A transaction commits in numbered steps (docs/processor.md, docs/architecture.md):

1. ``send_offsets_to_transaction(offsets, group_metadata)``: the input positions join the
   transaction (KIP-447: the group metadata lets the coordinator fence a zombie whose
   generation is stale); bounded, because librdkafka can ignore its timeout (librdkafka
   #5456/#5511). It goes first so that its round trips to the coordinators overlap the
   acknowledgements of the transaction's last outputs, as a hand-written loop's does (flushing
   first makes the two waits add up); the order does not matter to the outcome, since nothing of the
   transaction is visible before step 3;
2. flush the producer: every output record of the transaction is acknowledged (a failed one
   makes the transaction abortable; records left after the call timeout make it ambiguous);
3. ``commit_transaction()``: outputs and offsets become visible atomically.

A failed call is routed by :meth:`TransactionSession.recover` (the one decision,
:func:`sdk.recovery.decide`): abort, or recreate the client with the same
``transactional.id`` so that ``init_transactions()`` bumps the epoch and fences whatever the
old one still has in flight.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from typing import Literal, overload

from confluent_kafka import TopicPartition

from sdk._client import GroupMetadata
from sdk.errors import (
    AmbiguousTransactionError,
    ConfigurationError,
    KafkaClientError,
    ProducerFencedError,
    SdkError,
)
from sdk.observability import Telemetry, TransactionOutcome, TransactionSpan
from sdk.producer import Producer
from sdk.profiles import Guarantee, ProcessingProfile, ProducerProfile
from sdk.records import EmitRun, HandleRun, Output, TransactionStats
from sdk.recovery import Recovery, decide

__all__ = ["TransactionSession", "transactional_id_for"]


@overload
def transactional_id_for(
    profile: str, explicit: str | None = None, instance_id: str | None = None
) -> str: ...


@overload
def transactional_id_for(
    profile: ProcessingProfile | ProducerProfile,
    explicit: str | None = None,
    instance_id: str | None = None,
) -> str | None: ...


def transactional_id_for(
    profile: ProcessingProfile | ProducerProfile | str,
    explicit: str | None = None,
    instance_id: str | None = None,
) -> str | None:
    """The ``transactional.id`` of one instance of an exactly-once front end.

    ``explicit`` if given, else the profile's ``transactional_id``, else its
    ``transactional_id_prefix`` followed by ``instance_id``. The id must stay the same across
    restarts (the newest ``init_transactions()`` with it fences every older instance), and
    users keep it: what this returns for given arguments never changes.

    Args:
        profile: The front end's profile (its producer side decides), or a bare
            ``transactional_id_prefix`` (exactly_once implied; Spark's job planning has only
            that).
        explicit: A concrete id, which wins over the profile's.
        instance_id: The instance's stable suffix: the Processor's ``instance_id``; for a
            Spark task ``job.group.topic.partition``.

    Returns:
        The id; None for a profile that is not exactly_once.

    Raises:
        ConfigurationError: exactly_once with neither a transactional id nor an instance id.
    """
    if isinstance(profile, str):
        prefix: str | None = profile
        tid = explicit
    else:
        if profile.guarantee is not Guarantee.EXACTLY_ONCE:
            return None
        p = profile.producer if isinstance(profile, ProcessingProfile) else profile
        prefix, tid = p.transactional_id_prefix, explicit or p.transactional_id
    if tid is None:
        if not instance_id:
            raise ConfigurationError(
                "instance_id: the profile has only transactional_id_prefix; pass a stable "
                "instance_id (or transactional_id)",
                field="instance_id",
            )
        tid = f"{prefix}{instance_id}"
    return tid


class TransactionSession:
    """Begin / produce / commit / abort / recreate over one SDK Producer, and the recovery.

    The steps are the Producer's (:class:`~sdk.producer._transactions.TransactionalOutput`);
    the session adds their order (:meth:`commit`), what to do after one failed
    (:meth:`recover`) and the counters.

    Args:
        producer: The Producer it holds (its profile decides the guarantee; for exactly_once
            it must have a concrete ``transactional.id``). Its transaction methods, if called,
            run the same steps and count into the session's counters too.
        stats: Counters to update (a :class:`~sdk.processor.ProcessorStats` is one).
        telemetry: Span per transaction, retry and safeguard metrics (None: none).

    Attributes:
        output: The producer's transactional side the session drives.
        failures_in_a_row: Recoveries since the last commit (a front end may give up after
            too many).
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
        self.output = producer.transactional_output(stats=self.stats, telemetry=telemetry)
        self.failures_in_a_row = 0

    # ------------------------------------------------------------------ the open transaction
    @property
    def open(self) -> bool:
        """A transaction is open."""
        return self.output.open

    @property
    def opened_at(self) -> float:
        """``time.monotonic()`` when the open transaction began."""
        return self.output.opened_at

    @property
    def span(self) -> TransactionSpan | None:
        """The open transaction's span, if traced."""
        return self.output.span

    @property
    def stuck(self) -> bool:
        """A call ignored its timeout and may still be blocked in the client: do not call it."""
        return self.output.stuck

    @property
    def timeout_s(self) -> float:
        """Timeout of each transactional call (``transaction_call_timeout_ms``)."""
        return self.output.timeout_s

    # ------------------------------------------------------------------ the steps
    def start(
        self, timeout: float | None = None, stopped: Callable[[], bool] | None = None
    ) -> bool:
        """Create the client, wait for a broker, run ``init_transactions()`` (fences older epochs).

        Returns:
            False if ``stopped()`` became true before a broker answered (nothing started).

        Raises:
            BrokerUnreachableError: No broker answered for ``socket.connection.setup.timeout.ms``.
            KafkaClientError: init_transactions failed after retries.
        """
        return self.output.start(timeout, stopped)

    def begin(self) -> None:
        """Begin a transaction unless one is open (initializing transactions first if needed).

        Raises:
            KafkaClientError: begin_transaction failed.
        """
        self.output.begin()

    def produce(self, out: Output) -> None:
        """Queue one output record through the Producer (partitioner, bounded queue wait).

        Raises:
            KafkaClientError: The producer refused it (TransactionAbortableError inside a
                transaction unless fenced or fatal); the record is on ``.record``.
        """
        self.output.produce(out)

    def emitter(self) -> Callable[[Output], None]:
        """A function queuing one output on the hot path (call :meth:`serve` once per batch).

        Valid until the client or the transaction changes: ask again after :meth:`begin` or a
        recovery. It raises KafkaClientError and counts each output on the transaction span,
        as :meth:`produce` does.
        """
        return self.output.emitter()

    def emitters(self) -> tuple[Callable[[Output], None], HandleRun, EmitRun]:
        """:meth:`emitter`, and ``handle_run`` and ``emit_run`` on it (``TransactionalOutput``).

        Valid as :meth:`emitter` is.
        """
        return self.output.emitters()

    def serve(self) -> None:
        """Serve delivery reports and client events (once per polled batch).

        Raises:
            KafkaClientError: A fatal client error (fenced: ProducerFencedError).
        """
        self.output.serve()

    def flush(self, context: str = "commit step 2 (flush)", timeout: float | None = None) -> None:
        """Step 2: wait until every queued record is acknowledged or failed.

        Raises:
            AmbiguousTransactionError: Records left after ``message.timeout.ms``
                (KafkaTimeoutError outside a transaction).
            TransactionAbortableError: A record of the transaction failed (DeliveryError
                outside a transaction).
        """
        self.output.flush(context, timeout)

    def send_offsets(
        self, offsets: Sequence[TopicPartition], group_metadata: GroupMetadata, timeout: float
    ) -> None:
        """Step 1: the input positions join the open transaction, bounded (librdkafka #5456).

        Raises:
            AmbiguousTransactionError: The call did not return within its bound; the client
                is abandoned (never destroyed) and the recovery recreates it.
            KafkaClientError: The call failed (TransactionAbortableError for a stale member).
        """
        self.output.send_offsets(offsets, group_metadata, timeout)

    def commit_only(self, timeout: float | None = None) -> None:
        """Step 3: ``commit_transaction()`` (librdkafka flushes what is still queued first).

        Raises:
            KafkaClientError: The commit failed (the subclass tells the recovery path).
        """
        self.output.commit(timeout)
        self.failures_in_a_row = 0

    def commit(self, offsets: Sequence[TopicPartition], group_metadata: GroupMetadata) -> None:
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

    def abort_on_the_way_out(self, cause: BaseException) -> None:
        """A run leaves on an exception: abort the open transaction now (bounded, once).

        The caller's close would otherwise revoke the partitions, and a revoke commits the open
        transaction: outputs of a half-handled record would be committed. A transaction that
        is not open or whose client is stuck is left to the next epoch.
        """
        if not self.open or self.stuck:
            return
        bound = min(self.timeout_s, 5.0)
        # librdkafka #4849: an abort sent while the transaction's AddPartitionsToTxn is still
        # in flight (records produced a moment ago) is refused by the broker with a fatal
        # INVALID_TXN_STATE; once the records are acknowledged, their partitions are in it
        with suppress(SdkError):  # a failed record: the abort is still right
            self.flush("flush before the abort on the way out", timeout=bound)
        try:
            self.abort(cause, timeout=bound, attempts=1)
        except SdkError as exc:  # fenced or broken: the next epoch aborts it
            self.stats.note(f"abort on the way out failed ({exc}); the next epoch aborts it")
            return
        self.stats.aborts += 1
        self.stats.note(f"open transaction aborted on the way out ({type(cause).__name__})")

    def abort(
        self, cause: BaseException | None = None, timeout: float | None = None, attempts: int = 5
    ) -> None:
        """Abort the open transaction; the arguments are the producer's output's.

        See :meth:`~sdk.producer._transactions.TransactionalOutput.abort`.

        Raises:
            KafkaClientError: abort failed (AmbiguousTransactionError on a timeout).
        """
        self.output.abort(cause, timeout, attempts)

    def recreate(
        self, outcome: TransactionOutcome = "aborted", cause: BaseException | None = None
    ) -> None:
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

    def close(
        self, outcome: TransactionOutcome = "aborted", cause: BaseException | None = None
    ) -> None:
        """Drop the client without waiting (an open transaction is aborted by the next epoch).

        Args:
            outcome: Outcome recorded for a transaction still open (its span is ended).
            cause: The error that led here, if any.
        """
        self.output.close(outcome, cause)

    # ------------------------------------------------------------------ the one decision
    def recover(
        self, error: KafkaClientError, *, on_fenced: Literal["raise", "recreate"] = "raise"
    ) -> Recovery:
        """Route a failed transactional call to its path (:func:`sdk.recovery.decide`).

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
            transaction_timeout_ms=self.output.transaction_timeout_ms,
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
