"""``sdk.records.emit_run``: the Processor's hot loop for records whose handler ran already.

``sdk.aio.AsyncProcessor`` runs a batch's handlers on the event loop first; the core's hot loop
then only emits their outputs, in order, with the same stops as ``handle_run`` (the
transaction's record limit, the commit interval's clock) and nothing swallowed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from sdk import records
from sdk.producer._emitter import Emitter
from sdk.records import OutputRecord
from tests.sdk._due import ClockDue

Run = Callable[..., tuple[int, int, BaseException | None]]


def _emitter_emit_run(
    values: Any, i: int, stop: int, emit: Any, due_at: float, clock: Any
) -> tuple[int, int, BaseException | None]:
    """The Processor's emitter's ``emit_run`` as ``emit_run``, ``emit`` its general path:
    ``produce`` refuses every output, so each one, inline case or not, reaches ``emit``; it
    reads ``due.passed`` where ``emit_run`` reads the clock (``ClockDue``: the same clock)."""

    def refuse(*args: Any) -> None:
        raise BufferError("Local: Queue full")

    emitter = Emitter(OutputRecord, refuse, {"out"}, lambda out, span: emit(out), None, None)
    return emitter.emit_run(values, i, stop, ClockDue(due_at, clock))


@pytest.fixture(
    params=[
        pytest.param(records.emit_run, id="emit_run"),
        pytest.param(_emitter_emit_run, id="emitter-emit-run"),
    ]
)
def emit_run(request: pytest.FixtureRequest) -> Run:
    fn: Run = request.param
    return fn


VALUES: list[object] = [[("out", b"0")], None, [("out", b"2"), ("out", b"2b")], [], [("o", b"4")]]


def _never() -> float:
    return 0.0


def test_every_output_is_emitted_in_order_and_none_is_no_output(emit_run: Run) -> None:
    got: list[object] = []
    assert emit_run(VALUES, 0, len(VALUES), got.append, 1.0, _never) == (5, 4, None)
    assert got == [("out", b"0"), ("out", b"2"), ("out", b"2b"), ("o", b"4")]


def test_it_starts_at_i_and_stops_at_stop(emit_run: Run) -> None:
    got: list[object] = []
    assert emit_run(VALUES, 2, 4, got.append, 1.0, _never) == (4, 2, None)
    assert got == [("out", b"2"), ("out", b"2b")]


def test_the_clock_is_read_after_each_record_and_stops_the_run_at_due_at(emit_run: Run) -> None:
    reads: list[int] = []

    def clock() -> float:
        reads.append(1)
        return float(len(reads))  # due at the second read

    got: list[object] = []
    assert emit_run(VALUES, 0, len(VALUES), got.append, 2.0, clock) == (2, 1, None)
    assert len(reads) == 2
    assert got == [("out", b"0")]


def test_a_failing_emit_comes_back_at_its_record_with_what_was_emitted(emit_run: Run) -> None:
    got: list[object] = []

    def emit(out: object) -> None:
        if out == ("out", b"2b"):
            raise BufferError("queue full")
        got.append(out)

    i, produced, error = emit_run(VALUES, 0, len(VALUES), emit, 1.0, _never)
    assert (i, produced) == (2, 2)
    assert isinstance(error, BufferError)
    assert got == [("out", b"0"), ("out", b"2")]


def test_a_failing_clock_comes_back_after_the_record_it_followed(emit_run: Run) -> None:
    def clock() -> float:
        raise RuntimeError("clock")

    got: list[object] = []
    i, produced, error = emit_run(VALUES, 0, len(VALUES), got.append, 1.0, clock)
    assert (i, produced) == (1, 1)
    assert isinstance(error, RuntimeError)


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_in_emit_is_returned_not_swallowed(
    emit_run: Run, interrupt: Callable[[], BaseException]
) -> None:
    def emit(out: object) -> None:
        raise interrupt()

    _, _, error = emit_run(VALUES, 0, len(VALUES), emit, 1.0, _never)
    assert isinstance(error, interrupt)  # type: ignore[arg-type]
