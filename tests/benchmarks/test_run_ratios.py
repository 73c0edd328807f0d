"""The benchmark's comparisons: each repetition's pair, and the paired CPU gap (no broker)."""

from __future__ import annotations

from benchmarks._harness import Result, median_results
from benchmarks.run import TARGETS, _ratio_table, _ratios

GROUP, OURS, PEER, _TARGET = TARGETS[0]


def _run(repetition: int, ours: tuple[float, float], peer: tuple[float, float]) -> list[Result]:
    """One repetition of the first target: (seconds, client CPU µs/record) of ours and the peer."""
    return [
        Result(
            GROUP, case, 100, 1_000, seconds, extra={"client_cpu_us": cpu, "repetition": repetition}
        )
        for case, (seconds, cpu) in ((OURS, ours), (PEER, peer))
    ]


def test_the_cpu_gap_is_the_median_of_each_repetitions_pair_not_the_gap_of_the_medians() -> None:
    # the machine drifts: repetition 1 is slow for both, repetition 2 fast for both
    results = [
        *_run(0, ours=(1.0, 3.0), peer=(1.0, 2.9)),
        *_run(1, ours=(1.0, 5.0), peer=(1.0, 4.5)),
        *_run(2, ours=(1.0, 2.0), peer=(1.0, 1.8)),
    ]
    (ratio,) = _ratios(median_results(results), results)
    assert (ratio.ours, ratio.peer) == (OURS, PEER)
    assert [round(g, 6) for g in ratio.gaps] == [0.1, 0.5, 0.2]
    assert ratio.gap is not None and round(ratio.gap, 6) == 0.2
    # the gap of the medians would be 3.0 - 2.9: the pairs keep the drift out
    assert ratio.cpu == (3.0, 2.9)
    row = next(line for line in _ratio_table([ratio], every=True) if line.startswith(f"| {OURS}"))
    assert row.endswith("| +0.20 (+0.10, +0.50, +0.20) |")


def test_a_repetition_without_the_peers_cpu_gives_no_gap() -> None:
    results = _run(0, ours=(1.0, 3.0), peer=(1.0, 2.9))
    del results[1].extra["client_cpu_us"]
    (ratio,) = _ratios(median_results(results), results)
    assert ratio.gaps == [] and ratio.gap is None
    assert _ratio_table([ratio], every=True)[-1].endswith("| 1.00 |  |")
