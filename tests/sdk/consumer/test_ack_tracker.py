"""AckTracker: in-order offset storing under out-of-order acknowledgements (pure logic)."""

from __future__ import annotations

import random

import pytest

from sdk.consumer._offsets import AckTracker


def test_in_order_acks_advance_one_by_one() -> None:
    t = AckTracker()
    for off in range(3):
        t.track("a", 0, off)
    assert [t.ack("a", 0, off) for off in range(3)] == [1, 2, 3]
    assert t.outstanding() == 0


def test_out_of_order_ack_waits_for_the_gap() -> None:
    t = AckTracker()
    for off in (10, 11, 12, 13):
        t.track("a", 0, off)
    assert t.ack("a", 0, 12) is None
    assert t.ack("a", 0, 11) is None
    assert t.ack("a", 0, 10) == 13  # 10, 11, 12 contiguous: store 13
    assert t.outstanding() == 1
    assert t.ack("a", 0, 13) == 14


def test_offset_gaps_from_compaction_or_markers_are_fine() -> None:
    t = AckTracker()
    for off in (5, 9, 20):
        t.track("a", 0, off)
    assert t.ack("a", 0, 9) is None
    assert t.ack("a", 0, 5) == 10
    assert t.ack("a", 0, 20) == 21


def test_partitions_are_independent() -> None:
    t = AckTracker()
    t.track("a", 0, 0)
    t.track("a", 1, 0)
    t.track("b", 0, 7)
    assert t.ack("a", 1, 0) == 1
    assert t.ack("b", 0, 7) == 8
    assert t.outstanding() == 1


def test_double_ack_and_forgotten_partitions_raise_keyerror() -> None:
    t = AckTracker()
    t.track("a", 0, 0)
    t.track("a", 0, 1)
    t.ack("a", 0, 0)
    with pytest.raises(KeyError):
        t.ack("a", 0, 0)
    t.forget([("a", 0)])
    with pytest.raises(KeyError):
        t.ack("a", 0, 1)
    assert t.outstanding() == 0


def test_random_ack_order_never_stores_past_an_unacked_record() -> None:
    rng = random.Random(7)
    offsets = sorted(rng.sample(range(1000), 200))
    t = AckTracker()
    for off in offsets:
        t.track("a", 0, off)
    order = offsets[:]
    rng.shuffle(order)
    acked: set[int] = set()
    stored = -1
    for off in order:
        acked.add(off)
        result = t.ack("a", 0, off)
        prefix = 0
        while prefix < len(offsets) and offsets[prefix] in acked:
            prefix += 1
        expected = offsets[prefix - 1] + 1 if prefix else None
        if result is not None:
            assert result == expected and result > stored
            stored = result
        else:
            assert expected is None or expected == stored
    assert stored == offsets[-1] + 1
