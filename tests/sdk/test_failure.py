"""HandlerRunner: first attempt without tenacity, retries and backoff per the policy."""

from __future__ import annotations

import time

import pytest

from sdk.errors import HandlerError
from sdk.failure import HandlerRunner
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
