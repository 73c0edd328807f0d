"""HandlerRunner: first attempt without tenacity, retries and backoff per the policy."""

from __future__ import annotations

import time

import pytest

from sdk.core.failure import HandlerRunner
from sdk.errors import HandlerError
from sdk.profiles import FailurePolicy


def _flaky(failures: int, exc: type[Exception] = TimeoutError) -> tuple[list[int], object]:
    calls: list[int] = []

    def fn(arg: int) -> list[int]:
        calls.append(arg)
        if len(calls) <= failures:
            raise exc(f"failure {len(calls)}")
        return [arg * 2]

    return calls, fn


def test_success_first_time_runs_once() -> None:
    calls, fn = _flaky(0)
    assert HandlerRunner(FailurePolicy()).run(fn, 21) == [42]  # type: ignore[arg-type]
    assert calls == [21]


def test_retries_with_backoff_then_succeeds() -> None:
    retries: list[int] = []
    runner = HandlerRunner(
        FailurePolicy(attempts=3, backoff_initial_ms=50, backoff_max_ms=1000),
        on_retry=lambda: retries.append(1),
    )
    calls, fn = _flaky(2)
    started = time.monotonic()
    assert runner.run(fn, 1) == [2]  # type: ignore[arg-type]
    elapsed = time.monotonic() - started
    assert len(calls) == 3 and len(retries) == 2
    assert elapsed >= 0.05 + 0.1 - 0.01  # 50 ms, then 100 ms (exponential)


def test_all_attempts_fail() -> None:
    calls, fn = _flaky(10)
    runner = HandlerRunner(FailurePolicy(attempts=3, backoff_initial_ms=1, backoff_max_ms=2))
    with pytest.raises(HandlerError, match="after 3 attempt") as info:
        runner.run(fn, 5)  # type: ignore[arg-type]
    assert info.value.attempts == 3 and info.value.record == 5 and len(calls) == 3
    assert isinstance(info.value.__cause__, TimeoutError)


def test_error_outside_retry_on_fails_at_once() -> None:
    calls, fn = _flaky(10, exc=KeyError)
    policy = FailurePolicy(attempts=5, retry_on=("builtins.TimeoutError",))
    with pytest.raises(HandlerError, match="after 1 attempt") as info:
        HandlerRunner(policy).run(fn, 7)  # type: ignore[arg-type]
    assert info.value.attempts == 1 and len(calls) == 1


def test_single_attempt_policy() -> None:
    calls, fn = _flaky(1)
    with pytest.raises(HandlerError, match="after 1 attempt"):
        HandlerRunner(FailurePolicy(attempts=1)).run(fn, 0)  # type: ignore[arg-type]
    assert len(calls) == 1


def _printed(exc: BaseException) -> str:
    import traceback

    return "".join(traceback.format_exception(exc))


@pytest.mark.parametrize("attempts", [1, 3])
def test_a_failure_prints_its_cause_once_not_every_attempt(attempts: int) -> None:
    """The handler's last error is the cause; earlier attempts are not chained in again, even
    when the caller retries from inside its own ``except`` block (the hot loops do)."""
    runner = HandlerRunner(FailurePolicy(attempts=attempts, backoff_initial_ms=1))
    _calls, fn = _flaky(10)
    try:
        fn(0)  # type: ignore[operator]
    except TimeoutError as first:
        with pytest.raises(HandlerError) as err:
            runner.retry(fn, 1, first)  # type: ignore[arg-type]
    text = _printed(err.value)
    assert isinstance(err.value.__cause__, TimeoutError)
    assert text.count("The above exception was the direct cause") == 1
    assert "During handling of the above exception" not in text
    assert text.count("TimeoutError: failure") == 1
    with pytest.raises(HandlerError) as again:
        runner.run(_flaky(10)[1], 2)  # type: ignore[arg-type]
    assert "During handling" not in _printed(again.value)


def test_every_dead_lettered_record_is_logged_within_a_rate(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from sdk.core.failure import _Announcer

    class Message:
        def __init__(self, offset: int) -> None:
            self._offset = offset

        def topic(self) -> str:
            return "orders"

        def partition(self) -> int:
            return 2

        def offset(self) -> int:
            return self._offset

    announce = _Announcer(burst=3, window_s=0.2)
    with caplog.at_level("WARNING", logger="sdk.dead_letter"):
        for offset in range(5):
            announce(Message(offset), "orders-dlq", ValueError("bad amount"), 3)
        time.sleep(0.25)
        announce(Message(5), "orders-dlq", ValueError("bad amount"), 3)
    lines = [r.getMessage() for r in caplog.records]
    assert lines[0] == (
        "dead-lettered orders[2]@0 to orders-dlq after 3 attempt(s): ValueError: bad amount"
    )
    assert len(lines) == 4  # 3 in the first window, then one that sums up the 2 held back
    assert lines[3].startswith("dead-lettered orders[2]@5") and "(2 more dead-lettered" in lines[3]
