"""``sdk.records.handle_run``, the Processor's and the Consumer's per-record loop.

Checks what its docstring promises: which records are handled, what is emitted, where the run
stops, and what comes back when the handler, the view, ``emit`` or the clock raise. No broker
(the Processor's and the Consumer's tests run it on the broker). The messages are real
``confluent_kafka.Message`` objects (built without a broker), one subclassed to fail its
``value()``.
"""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Message

from sdk import records
from sdk.producer._emitter import Emitter
from sdk.records import ConsumerRecord, OutputRecord
from tests.sdk._due import ClockDue

Run = Callable[..., tuple[int, int, Any, BaseException | None]]


def _emitter_run(
    msgs: Any,
    i: int,
    n: int,
    stop: int,
    handler: Any,
    emit: Any,
    cls: Any,
    due_at: float,
    clock: Any,
) -> tuple[int, int, Any, BaseException | None]:
    """The Processor's emitter's loop (``Emitter.run``) as ``handle_run``, ``emit`` its general
    path: ``produce`` refuses every output, so each one, inline case or not, reaches ``emit``;
    it reads ``due.passed`` where ``handle_run`` reads the clock (``ClockDue``: the same clock)."""
    if emit is None or clock is None:
        pytest.skip("the emitter's loop always emits and reads its deadline (the Processor's)")

    def refuse(*args: Any) -> None:
        raise BufferError("Local: Queue full")

    emitter = Emitter(OutputRecord, refuse, {"out"}, lambda out, span: emit(out), None, None)
    return emitter.run(msgs, i, n, stop, handler, cls, ClockDue(due_at, clock))


RUNS: list[Any] = [
    pytest.param(records.handle_run, id="handle_run"),
    pytest.param(_emitter_run, id="emitter-run"),
]


class _Broken(Message):
    """A message whose value cannot be read (the view fails on it)."""

    def value(self) -> Any:
        raise RuntimeError(f"no value at {self.offset()}")


def _message(i: int, cls: type[Message] = Message) -> Message:
    return cls(topic="in", partition=0, offset=i, key=b"k%d" % i, value=b"v%d" % i)


def _messages(n: int) -> list[Any]:
    return [_message(i) for i in range(n)]


def _never() -> float:
    return 0.0  # the clock never reaches due_at=1.0


@pytest.fixture(params=RUNS)
def run(request: pytest.FixtureRequest) -> Run:
    fn: Run = request.param
    return fn


def _copy(record: ConsumerRecord) -> list[Any]:
    return [("out", record.value)]


def test_every_record_is_handled_and_every_output_emitted_in_order(run: Run) -> None:
    msgs, emitted = _messages(5), []
    result = run(msgs, 0, 5, 5, _copy, emitted.append, ConsumerRecord, 1.0, _never)
    assert result == (5, 5, None, None)
    assert emitted == [("out", b"v%d" % i) for i in range(5)]


@pytest.mark.parametrize(
    ("returned", "outputs"),
    [
        ([1, 2], [1, 2]),
        ((1, 2), [1, 2]),
        (None, []),
        ([], []),
        ((), []),
        ("generator", [0, 1, 2]),
    ],
)
def test_a_handler_may_return_any_iterable_or_none(run: Run, returned: Any, outputs: Any) -> None:
    def handler(record: ConsumerRecord) -> Any:
        return (x for x in range(3)) if returned == "generator" else returned

    emitted: list[Any] = []
    i, produced, record, error = run(
        _messages(2), 0, 2, 2, handler, emitted.append, ConsumerRecord, 1.0, _never
    )
    assert (i, produced, record, error) == (2, 2 * len(outputs), None, None)
    assert emitted == outputs * 2


def test_the_run_starts_at_i_and_stops_at_n(run: Run) -> None:
    emitted: list[Any] = []
    result = run(_messages(6), 2, 4, 100, _copy, emitted.append, ConsumerRecord, 1.0, _never)
    assert result == (4, 2, None, None)
    assert emitted == [("out", b"v2"), ("out", b"v3")]


def test_the_run_stops_at_stop_but_always_handles_one_record(run: Run) -> None:
    emitted: list[Any] = []
    assert run(_messages(6), 0, 6, 3, _copy, emitted.append, ConsumerRecord, 1.0, _never)[:2] == (
        3,
        3,
    )
    # a transaction already at its record cap: one record, then back to commit
    assert run(_messages(6), 4, 6, 0, _copy, emitted.append, ConsumerRecord, 1.0, _never)[:2] == (
        5,
        1,
    )


def test_the_clock_is_read_after_each_record_and_stops_the_run_at_due_at(run: Run) -> None:
    readings = iter([0.5, 0.9, 1.0, 2.0])
    calls = []

    def clock() -> float:
        calls.append(1)
        return next(readings)

    result = run(_messages(10), 0, 10, 10, _copy, lambda out: None, ConsumerRecord, 1.0, clock)
    assert result == (3, 3, None, None)  # 0.5 and 0.9 go on, 1.0 reaches due_at
    assert len(calls) == 3
    # the last record and the stop are not followed by a clock read
    calls.clear()
    readings = iter([0.0] * 10)
    assert run(_messages(3), 0, 3, 3, _copy, lambda out: None, ConsumerRecord, 1.0, clock)[0] == 3
    assert len(calls) == 2


@pytest.mark.parametrize("raised", [ValueError("bad record"), KeyboardInterrupt()])
def test_a_failing_handler_hands_back_its_record_and_what_it_raised(
    run: Run, raised: BaseException
) -> None:
    emitted: list[Any] = []

    def handler(record: ConsumerRecord) -> list[Any]:
        if record.offset == 2:
            raise raised
        return [record.offset]

    i, produced, record, error = run(
        _messages(5), 0, 5, 5, handler, emitted.append, ConsumerRecord, 1.0, _never
    )
    assert (i, produced, error) == (2, 2, raised)
    assert type(record) is ConsumerRecord and (record.offset, record.value) == (2, b"v2")
    assert emitted == [0, 1]
    # the handler's own frame is on the traceback (the failure policy logs it)
    assert "handler" in [f.name for f in traceback.extract_tb(error.__traceback__)]


def test_a_handler_returning_what_is_not_iterable_failed_on_that_record(run: Run) -> None:
    i, produced, record, error = run(
        _messages(3), 0, 3, 3, lambda r: 5, lambda out: None, ConsumerRecord, 1.0, _never
    )
    assert (i, produced, record.offset) == (0, 0, 0)
    assert isinstance(error, TypeError)


def test_a_failing_emit_returns_no_record_and_counts_what_was_emitted(run: Run) -> None:
    emitted: list[Any] = []

    def emit(out: Any) -> None:
        if out == (1, "b"):
            raise OSError("queue refused")
        emitted.append(out)

    def handler(record: ConsumerRecord) -> list[Any]:
        return [(record.offset, "a"), (record.offset, "b")]

    i, produced, record, error = run(
        _messages(3), 0, 3, 3, handler, emit, ConsumerRecord, 1.0, _never
    )
    assert (i, produced, record) == (1, 3, None)  # record 1's first output went out
    assert isinstance(error, OSError) and str(error) == "queue refused"
    assert emitted == [(0, "a"), (0, "b"), (1, "a")]


def test_a_failing_view_returns_no_record(run: Run) -> None:
    msgs = _messages(3)
    msgs[1] = _message(1, _Broken)
    seen: list[int] = []

    def handler(record: ConsumerRecord) -> None:
        seen.append(record.offset)

    i, produced, record, error = run(
        msgs, 0, 3, 3, handler, lambda out: None, ConsumerRecord, 1.0, _never
    )
    assert (i, produced, record, seen) == (1, 0, None, [0])
    assert isinstance(error, RuntimeError) and "no value at 1" in str(error)


def test_a_failing_clock_comes_back_after_the_record_it_followed(run: Run) -> None:
    def clock() -> float:
        raise RuntimeError("no clock")

    i, produced, record, error = run(
        _messages(3), 0, 3, 3, _copy, lambda out: None, ConsumerRecord, 1.0, clock
    )
    assert (i, produced, record) == (1, 1, None)
    assert isinstance(error, RuntimeError)


def test_an_index_past_the_list_comes_back_as_an_index_error(run: Run) -> None:
    i, produced, record, error = run(
        _messages(2), 0, 4, 4, _copy, lambda out: None, ConsumerRecord, 1.0, _never
    )
    assert (i, produced, record) == (2, 2, None)
    assert isinstance(error, IndexError)


def test_nothing_is_kept_after_the_run(run: Run) -> None:
    """Every path lets go of the messages, the outputs and the errors it touched (a leak per
    record would grow with every record a Processor handles)."""
    msgs = _messages(4)
    out = object()
    boom = ValueError("boom")
    before = [sys.getrefcount(m) for m in msgs] + [sys.getrefcount(out), sys.getrefcount(boom)]

    def handler(record: ConsumerRecord) -> Iterator[Any]:
        if record.offset == 3:
            raise boom
        yield out

    for _ in range(50):
        result = run(msgs, 0, 4, 4, handler, lambda o: None, ConsumerRecord, 1.0, _never)
        assert result[3] is boom
        del result
        boom.__traceback__ = None  # the traceback holds the handler's frame, not the run
        failing = run(msgs, 0, 4, 4, _copy, _raise, ConsumerRecord, 1.0, _never)
        del failing
    after = [sys.getrefcount(m) for m in msgs] + [sys.getrefcount(out), sys.getrefcount(boom)]
    assert after == before


def _raise(out: Any) -> None:
    raise OSError("refused")


@pytest.mark.parametrize("returned", [[("out", b"x")], "not iterable as outputs", 42, None])
def test_without_emit_what_a_handler_returns_is_ignored(run: Run, returned: Any) -> None:
    """The Consumer passes ``emit`` None: its handlers' results are never iterated."""
    msgs, seen = _messages(4), []

    def handler(record: ConsumerRecord) -> Any:
        seen.append(record.offset)
        return returned

    assert run(msgs, 0, 4, 4, handler, None, ConsumerRecord, 1.0, _never) == (4, 0, None, None)
    assert seen == [0, 1, 2, 3]


def test_without_a_clock_it_runs_to_stop(run: Run) -> None:
    """The Consumer passes ``clock`` None when it stores no offsets: no clock read at all."""
    msgs, seen = _messages(6), []
    result = run(msgs, 1, 6, 4, lambda r: seen.append(r.offset), None, ConsumerRecord, 0.0, None)
    assert result == (4, 0, None, None)  # due_at 0.0 would have stopped it after one record
    assert seen == [1, 2, 3]


def test_without_emit_a_failing_handler_still_returns_its_record(run: Run) -> None:
    msgs = _messages(3)

    def handler(record: ConsumerRecord) -> None:
        if record.offset == 1:
            raise ValueError("bad record")

    i, produced, record, error = run(msgs, 0, 3, 3, handler, None, ConsumerRecord, 1.0, _never)
    assert (i, produced, record.offset, type(error)) == (1, 0, 1, ValueError)


def test_time_monotonic_itself_stops_the_run_at_due_at(run: Run) -> None:
    seen: list[int] = []

    def slow(record: ConsumerRecord) -> None:
        seen.append(record.offset)
        time.sleep(0.002)

    due_at = time.monotonic() + 0.02
    i, _, record, error = run(
        _messages(200), 0, 200, 200, slow, None, ConsumerRecord, due_at, time.monotonic
    )
    assert time.monotonic() >= due_at and (record, error) == (None, None)
    assert 1 <= i < 20 and seen == list(range(i))  # ~10 records of 2 ms, not all 200
    # a deadline already past: one record, then the clock stops the run
    assert run(_messages(5), 0, 5, 5, slow, None, ConsumerRecord, 0.0, time.monotonic)[0] == 1


def test_a_record_the_handler_keeps_is_never_changed_by_the_next_one(run: Run) -> None:
    kept: list[ConsumerRecord] = []
    seen: list[tuple[int, bytes]] = []

    def handler(record: ConsumerRecord) -> None:
        seen.append((record.offset, record.value))
        if record.offset % 3 == 0:
            kept.append(record)

    msgs = _messages(10)
    assert run(msgs, 0, 10, 10, handler, None, ConsumerRecord, 1.0, _never) == (10, 0, None, None)
    assert seen == [(i, b"v%d" % i) for i in range(10)]
    assert [(r.offset, r.key, r.value) for r in kept] == [
        (i, b"k%d" % i, b"v%d" % i) for i in (0, 3, 6, 9)
    ]
    assert [r.raw for r in kept] == [msgs[i] for i in (0, 3, 6, 9)]


def test_a_view_nobody_kept_is_the_next_records_view(run: Run) -> None:
    """One view for a run whose handler keeps no record; a kept one makes the next one new."""
    views: list[int] = []
    kept: list[ConsumerRecord] = []

    def handler(record: ConsumerRecord) -> None:
        views.append(id(record))
        assert (record.offset, record.key, record.value) == (
            len(views) - 1,
            b"k%d" % (len(views) - 1),
            b"v%d" % (len(views) - 1),
        )
        if record.offset == 2:
            kept.append(record)

    result = run(_messages(6), 0, 6, 6, handler, lambda out: None, ConsumerRecord, 1.0, _never)
    assert result == (6, 0, None, None)
    assert views[0] == views[1] == views[2] and len(set(views[3:])) == 1
    assert views[3] != views[2] and kept[0].offset == 2
