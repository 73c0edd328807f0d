"""The benchmark's case-per-process runner: the child's settings and its own CPU (no broker)."""

from __future__ import annotations

import os
import time

import pytest

from benchmarks import _harness
from benchmarks._harness import Result, in_fresh_process, with_own_cpu


def spin(seconds: float, records: int) -> Result:
    """A case that burns ``seconds`` of CPU and says it handled ``records``."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    extra = {"pid": os.getpid(), "backoff": _harness.FETCH_BACKOFF_MS}
    return Result("g", "c", 100, records, seconds, extra=extra)


def timed_itself(records: int) -> Result:
    """A case that timed its own CPU (as the sink cases do)."""
    return Result("g", "c", 100, records, 1.0, extra={"client_cpu_us": 42.0})


def test_with_own_cpu_counts_the_cpu_of_the_call_per_record() -> None:
    result = with_own_cpu(spin, 0.2, 100_000)
    assert result is not None
    # 0.2 s over 100,000 records: 2 µs each (the process's CPU: a little more, never less)
    assert 2.0 <= result.extra["client_cpu_us"] < 3.0


def test_with_own_cpu_keeps_a_figure_the_case_measured_itself() -> None:
    result = with_own_cpu(timed_itself, 10)
    assert result is not None and result.extra["client_cpu_us"] == 42.0


def test_a_fresh_process_runs_the_case_elsewhere_with_the_runs_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_harness, "FETCH_BACKOFF_MS", 37)
    result = in_fresh_process(with_own_cpu, spin, 0.2, 100_000)
    assert result is not None
    assert result.extra["pid"] != os.getpid()
    assert result.extra["backoff"] == 37  # spawn starts from the module's default (10)
    # the child's start-up and imports (0.4 s of CPU measured, 4 µs/record here) are not in it
    assert 2.0 <= result.extra["client_cpu_us"] < 3.0
