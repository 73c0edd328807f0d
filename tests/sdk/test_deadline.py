"""``sdk._deadline.Deadline``: the flag the Processor's per-record loop reads for a commit.

Real threads and the real clock, no broker. The bounds are loose on purpose (a loaded 2-core
machine); what is checked is the order of events: never passed before ``at``, passed after it.
"""

from __future__ import annotations

import threading
import time

from sdk._deadline import Deadline


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "sdk-deadline"]


def _wait_passed(due: Deadline, timeout_s: float = 5.0) -> float:
    """Poll ``due.passed`` (as the loop reads it); return the clock when it turned True."""
    end = time.monotonic() + timeout_s
    while not due.passed:
        assert time.monotonic() < end, "the deadline never passed"
        time.sleep(0.001)
    return time.monotonic()


def test_it_passes_at_its_time_not_before() -> None:
    due = Deadline()
    try:
        at = time.monotonic() + 0.1
        due.set(at)
        assert due.at == at and not due.passed
        assert _wait_passed(due) >= at
    finally:
        due.close()


def test_a_time_already_past_has_passed_at_once() -> None:
    due = Deadline()
    try:
        due.set(time.monotonic() - 0.001)
        assert due.passed
    finally:
        due.close()


def test_set_moves_it_later_and_earlier() -> None:
    due = Deadline()
    try:
        due.set(time.monotonic() + 0.05)
        due.set(time.monotonic() + 60.0)  # moved later before it passed
        time.sleep(0.2)
        assert not due.passed
        due.set(time.monotonic() + 0.05)  # and earlier again: the thread waits less
        _wait_passed(due, timeout_s=5.0)
        later = time.monotonic() + 0.1
        due.set(later)  # a new interval after a commit: not passed until its time
        assert not due.passed
        assert _wait_passed(due) >= later
    finally:
        due.close()


def test_the_same_time_again_changes_nothing() -> None:
    due = Deadline()
    try:
        at = time.monotonic() + 0.02
        due.set(at)
        _wait_passed(due)
        due.set(at)  # the loop sets it before each run of records: still passed
        assert due.passed
    finally:
        due.close()


def test_close_ends_its_thread_for_good() -> None:
    before = len(_threads())
    due = Deadline()
    due.set(time.monotonic() + 60.0)
    assert len(_threads()) == before + 1
    assert all(t.daemon for t in _threads())  # a deadline nobody closed never blocks exit
    due.close()
    due.close()  # idempotent
    assert len(_threads()) == before
    # a set after close (a Processor closed from another thread while its loop runs): no
    # thread; a time already past is still marked at once, a later one never
    due.set(time.monotonic() + 0.01)
    assert len(_threads()) == before and not due.passed
    time.sleep(0.05)
    assert not due.passed
    due.set(time.monotonic() - 0.001)
    assert due.passed and len(_threads()) == before
