"""``sdk.records.emit_run``: the Processor's hot loop for records whose handler ran already.

``sdk.aio.AsyncProcessor`` runs a batch's handlers on the event loop first; the core's hot loop
then only emits their outputs, in order, with the same stops as ``handle_run`` (the
transaction's record limit, the commit interval's clock) and nothing swallowed.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sdk.records import emit_run

VALUES: list[object] = [[("out", b"0")], None, [("out", b"2"), ("out", b"2b")], [], [("o", b"4")]]


def _never() -> float:
    return 0.0


def test_every_output_is_emitted_in_order_and_none_is_no_output() -> None:
    got: list[object] = []
    assert emit_run(VALUES, 0, len(VALUES), got.append, 1.0, _never) == (5, 4, None)
    assert got == [("out", b"0"), ("out", b"2"), ("out", b"2b"), ("o", b"4")]


def test_it_starts_at_i_and_stops_at_stop() -> None:
    got: list[object] = []
    assert emit_run(VALUES, 2, 4, got.append, 1.0, _never) == (4, 2, None)
    assert got == [("out", b"2"), ("out", b"2b")]


def test_the_clock_is_read_after_each_record_and_stops_the_run_at_due_at() -> None:
    reads: list[int] = []

    def clock() -> float:
        reads.append(1)
        return float(len(reads))  # due at the second read

    got: list[object] = []
    assert emit_run(VALUES, 0, len(VALUES), got.append, 2.0, clock) == (2, 1, None)
    assert len(reads) == 2
    assert got == [("out", b"0")]


def test_a_failing_emit_comes_back_at_its_record_with_what_was_emitted() -> None:
    got: list[object] = []

    def emit(out: object) -> None:
        if out == ("out", b"2b"):
            raise BufferError("queue full")
        got.append(out)

    i, produced, error = emit_run(VALUES, 0, len(VALUES), emit, 1.0, _never)
    assert (i, produced) == (2, 2)
    assert isinstance(error, BufferError)
    assert got == [("out", b"0"), ("out", b"2")]


def test_a_failing_clock_comes_back_after_the_record_it_followed() -> None:
    def clock() -> float:
        raise RuntimeError("clock")

    got: list[object] = []
    i, produced, error = emit_run(VALUES, 0, len(VALUES), got.append, 1.0, clock)
    assert (i, produced) == (1, 1)
    assert isinstance(error, RuntimeError)


@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_in_emit_is_returned_not_swallowed(
    interrupt: Callable[[], BaseException],
) -> None:
    def emit(out: object) -> None:
        raise interrupt()

    _, _, error = emit_run(VALUES, 0, len(VALUES), emit, 1.0, _never)
    assert isinstance(error, interrupt)  # type: ignore[arg-type]
