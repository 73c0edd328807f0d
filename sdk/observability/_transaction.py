"""The span of one Kafka transaction: begun once, ended exactly once with its outcome."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal, Protocol, get_args

from opentelemetry.trace import Span, SpanContext, Status, StatusCode

from sdk.observability import _conventions as c

if TYPE_CHECKING:
    from sdk.observability._metrics import Instruments

__all__ = ["Counter", "TransactionOutcome", "TransactionSpan"]

TransactionOutcome = Literal["committed", "aborted", "unknown"]
"""``unknown``: the commit/abort timed out (ambiguous) or the span ended without an outcome."""

OUTCOMES: tuple[str, ...] = get_args(TransactionOutcome)
_log = logging.getLogger("sdk.observability")


class Counter(Protocol):
    """What counts outputs for a span: the Processor's emitter (:mod:`sdk.producer._emitter`)."""

    @property
    def emitted(self) -> int:
        """Outputs counted so far."""
        ...


class TransactionSpan:
    """An INTERNAL span ``kafka.transaction`` from begin to commit/abort, plus its metrics.

    Count records with :meth:`add` (output records) and :meth:`add_input` (consumed input
    records whose offsets join the transaction), then :meth:`end` it once; later calls to
    :meth:`end` are ignored, so every error path may end it without bookkeeping.

    Attributes:
        transactional_id: The producer's ``transactional.id``.
        records: Output records produced in the transaction.
        input_records: Input records whose offsets the transaction commits.
        outcome: The outcome once ended, else None.
    """

    def __init__(
        self,
        span: Span,
        instruments: Instruments,
        transactional_id: str,
        metrics_enabled: Callable[[], bool] = lambda: True,
    ) -> None:
        self.span = span
        self._m = instruments
        self._metrics_enabled = metrics_enabled
        self.transactional_id = transactional_id
        self._records = 0
        # emitters whose own count of outputs is part of records (count_from)
        self._counters: list[Counter] = []
        self.input_records = 0
        self.outcome: TransactionOutcome | None = None
        self._started = time.monotonic()

    @property
    def span_context(self) -> SpanContext:
        """The span's context (for links from the process spans of the transaction)."""
        return self.span.get_span_context()

    @property
    def ended(self) -> bool:
        """Whether :meth:`end` ran."""
        return self.outcome is not None

    @property
    def records(self) -> int:
        """Output records produced in the transaction (added, and counted by emitters)."""
        counted: int = sum(counter.emitted for counter in self._counters)
        return self._records + counted

    @records.setter
    def records(self, count: int) -> None:
        self._records = count
        self._counters.clear()

    def add(self, count: int = 1) -> None:
        """Count ``count`` output records produced in this transaction."""
        self._records += count

    def count_from(self, counter: Counter) -> None:
        """Count the outputs ``counter`` queues too: its ``emitted`` is read with :attr:`records`.

        The Processor's emitter (:mod:`sdk.producer._emitter`) counts its fast-path outputs
        itself: an :meth:`add` call per output cost as much as the rest of it.
        """
        self._counters.append(counter)

    def add_input(self, count: int = 1) -> None:
        """Count ``count`` input records whose offsets this transaction commits."""
        self.input_records += count

    def set_outcome(
        self,
        outcome: TransactionOutcome,
        *,
        records: int | None = None,
        input_records: int | None = None,
        error: BaseException | None = None,
    ) -> None:
        """Alias of :meth:`end` for use inside ``with tel.transaction_span(...)``.

        Raises:
            ValueError: ``outcome`` is not committed, aborted or unknown.
        """
        self.end(outcome, records=records, input_records=input_records, error=error)

    def end(
        self,
        outcome: TransactionOutcome,
        *,
        records: int | None = None,
        input_records: int | None = None,
        error: BaseException | None = None,
    ) -> None:
        """End the span with ``outcome`` and count the transaction (idempotent).

        Args:
            outcome: ``committed``, ``aborted`` or ``unknown``.
            records: Output record count, if not counted with :meth:`add`.
            input_records: Input record count, if not counted with :meth:`add_input`.
            error: The error that caused an abort (sets ``error.type`` and the span status).

        Raises:
            ValueError: ``outcome`` is not one of :data:`TransactionOutcome`.
        """
        if outcome not in OUTCOMES:
            raise ValueError(f"outcome {outcome!r}: valid: {', '.join(OUTCOMES)}")
        if self.outcome is not None:
            return
        self.outcome = outcome
        # the emitters' counts folded in, and the emitters let go of: they hold this span (for
        # their general path), so keeping them would leave a cycle for the collector
        self.records = self.records if records is None else records
        if input_records is not None:
            self.input_records = input_records
        elapsed = time.monotonic() - self._started
        attrs = {c.MESSAGING_SYSTEM: "kafka", c.OUTCOME: outcome}
        if error is not None:
            attrs[c.ERROR_TYPE] = type(error).__name__
        span = self.span
        if span.is_recording():
            span.set_attribute(c.OUTCOME, outcome)
            span.set_attribute(c.MESSAGING_BATCH_MESSAGE_COUNT, self.records)
            span.set_attribute(c.TRANSACTION_INPUT_RECORDS, self.input_records)
            if error is not None:
                span.set_attribute(c.ERROR_TYPE, type(error).__name__)
                span.record_exception(error)
            if outcome != "committed":
                span.set_status(Status(StatusCode.ERROR, f"transaction {outcome}"))
        span.end()
        if self._metrics_enabled():
            self._m.transactions.add(1, attrs)
            self._m.transaction_duration.record(elapsed, attrs)
        level = logging.DEBUG if outcome == "committed" else logging.WARNING
        if _log.isEnabledFor(level):
            _log.log(
                level,
                "transaction %s: %s records out, %s in, %.3f s%s",
                outcome,
                self.records,
                self.input_records,
                elapsed,
                f" ({type(error).__name__})" if error is not None else "",
                extra={
                    "transactional_id": self.transactional_id,
                    "outcome": outcome,
                    "records": self.records,
                    "input_records": self.input_records,
                    "trace_id": format(self.span_context.trace_id, "032x"),
                },
            )
