"""``benchmarks.processor_loop``: both loops handle every record; the figures come out.

No broker. A few thousand records, one run: it checks the microbenchmark measures what it
says (the Processor's loop takes the inline output path for every record and finds the four
partitions' positions), not the figures themselves.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from benchmarks import processor_loop


def test_both_loops_handle_every_record_and_produce_one_output_each() -> None:
    msgs = processor_loop.messages(3_000)
    produced: list[tuple[Any, ...]] = []
    for loop in (processor_loop.hand_written, processor_loop.processor):
        produced.clear()
        assert loop(msgs, lambda *args: produced.append(args)) == 3_000
        assert produced == [(processor_loop.OUT, m.value(), m.key()) for m in msgs]
    positions: dict[tuple[str, int], int] = {}
    processor_loop.processor(msgs, slice, positions)
    last = {(m.topic(), m.partition()): m.offset() + 1 for m in msgs}
    assert positions == last and len(last) == 4


def test_the_messages_come_in_runs_of_the_partitions_in_turn_offsets_counting_up() -> None:
    msgs = processor_loop.messages(2_000)
    last: dict[int, int] = {}
    runs = 1
    for before, m in itertools.pairwise(msgs):
        runs += before.partition() != m.partition()
    for m in msgs:
        assert m.offset() == last.get(m.partition(), -1) + 1
        last[m.partition()] = m.offset()
    assert sorted(last) == [0, 1, 2, 3] and 2_000 / 300 <= runs <= 2_000 / 50 + 1


def test_measure_gives_each_loops_cpu_per_record_and_the_gap() -> None:
    result = processor_loop.measure(records=2_000, runs=1)
    assert result["hand-written"] > 0 and result["Processor"] > 0
    assert result["gap"] == pytest.approx(result["Processor"] - result["hand-written"])
