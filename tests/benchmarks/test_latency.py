"""The latency benchmark's pure parts: the value stamp and the percentiles (no broker)."""

from __future__ import annotations

import pytest

from benchmarks._latency_worker import quantile, stamp, summarise, unstamp


def test_stamp_round_trips_send_time_and_index_at_the_record_size() -> None:
    sent_ns, index = 1_795_687_306_838_123_456, 123_456_789
    value = stamp(sent_ns, index, b"x" * 84)
    assert len(value) == 100
    assert unstamp(value) == (sent_ns, index)
    assert value[16:] == b"x" * 84


def test_unstamp_reads_only_the_head() -> None:
    assert unstamp(stamp(1, 2, b"") + b"anything after") == (1, 2)


@pytest.mark.parametrize(
    ("q", "expected"),
    [(0.5, 50.0), (0.99, 99.0), (0.999, 100.0), (1.0, 100.0), (0.001, 1.0)],
)
def test_quantile_is_nearest_rank(q: float, expected: float) -> None:
    assert quantile([float(x) for x in range(1, 101)], q) == expected


def test_quantile_of_one_sample_is_that_sample() -> None:
    assert quantile([7.5], 0.5) == quantile([7.5], 0.999) == 7.5


def test_summarise_sorts_and_names_the_percentiles() -> None:
    samples = [float(x) for x in range(1000, 0, -1)]  # 1..1000 ms, unsorted
    assert summarise(samples) == {
        "p50_ms": 500.0,
        "p99_ms": 990.0,
        "p999_ms": 999.0,
        "max_ms": 1000.0,
    }


def test_summarise_without_samples_is_none() -> None:
    assert summarise([]) == dict.fromkeys(("p50_ms", "p99_ms", "p999_ms", "max_ms"))
