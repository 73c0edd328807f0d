from __future__ import annotations

import random

import pytest

from sdk.assignors import Member, SupportsSticky, TopicPartition, check_plan
from sdk.assignors._builtin import (
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
)
from sdk.errors import ConfigurationError


def tps(topic: str, n: int) -> list[TopicPartition]:
    return [TopicPartition(topic, p) for p in range(n)]


def members(n: int, topics: tuple[str, ...] = ("t",)) -> list[Member]:
    return [Member.of(f"c{i}", topics) for i in range(n)]


def nums(plan: dict[str, list[TopicPartition]]) -> dict[str, list[int]]:
    return {k: [tp.partition for tp in v] for k, v in plan.items()}


def test_range_8_partitions_3_consumers_gives_3_3_2() -> None:
    plan = RangeAssignor().assign(members(3), tps("t", 8))
    assert nums(plan) == {"c0": [0, 1, 2], "c1": [3, 4, 5], "c2": [6, 7]}


def test_round_robin_8_partitions_3_consumers_deals_cyclically() -> None:
    plan = RoundRobinAssignor().assign(members(3), tps("t", 8))
    assert nums(plan) == {"c0": [0, 3, 6], "c1": [1, 4, 7], "c2": [2, 5]}


def test_range_is_per_topic_and_round_robin_spans_topics() -> None:
    ms = members(2, ("a", "b"))
    parts = tps("a", 3) + tps("b", 3)
    assert RangeAssignor().assign(ms, parts) == {
        "c0": [
            TopicPartition("a", 0),
            TopicPartition("a", 1),
            TopicPartition("b", 0),
            TopicPartition("b", 1),
        ],
        "c1": [TopicPartition("a", 2), TopicPartition("b", 2)],
    }
    # librdkafka's documented example: C0 [t0p0, t0p2, t1p1], C1 [t0p1, t1p0, t1p2]
    assert RoundRobinAssignor().assign(ms, parts) == {
        "c0": [TopicPartition("a", 0), TopicPartition("a", 2), TopicPartition("b", 1)],
        "c1": [TopicPartition("a", 1), TopicPartition("b", 0), TopicPartition("b", 2)],
    }


def test_round_robin_skips_members_not_subscribed_like_librdkafka() -> None:
    ms = [Member.of("c0", ["a"]), Member.of("c1", ["a", "b"]), Member.of("c2", ["a", "b"])]
    plan = RoundRobinAssignor().assign(ms, tps("a", 2) + tps("b", 3))
    # a0->c0, a1->c1, then next=c2: b0->c2, next=c0 (not subscribed) -> first >= c0 = c1: b1->c1,
    # next=c1: b2->c1
    assert nums(plan) == {"c0": [0], "c1": [1, 1, 2], "c2": [0]}
    check_plan(plan, ms, tps("a", 2) + tps("b", 3))


@pytest.mark.parametrize(
    "assignor",
    [RangeAssignor(), RoundRobinAssignor(), StickyAssignor(), CooperativeStickyAssignor()],
)
def test_plans_are_deterministic_sorted_and_complete(assignor: object) -> None:
    rng = random.Random(7)
    for _ in range(50):
        topics = [f"t{i}" for i in range(rng.randint(1, 3))]
        ms = [Member.of(f"m{rng.randint(0, 10**6):07d}", topics) for _ in range(rng.randint(1, 6))]
        ms = list({m.member_id: m for m in ms}.values())
        parts = [tp for t in topics for tp in tps(t, rng.randint(1, 12))]
        plan = assignor.assign(ms, parts)  # type: ignore[attr-defined]
        shuffled = assignor.assign(rng.sample(ms, len(ms)), rng.sample(parts, len(parts)))  # type: ignore[attr-defined]
        assert plan == shuffled
        assert list(plan) == sorted(plan)
        assert all(v == sorted(v) for v in plan.values())
        assert check_plan(plan, ms, parts) == plan
        counts = [len(v) for v in plan.values()]
        if not isinstance(assignor, RangeAssignor):
            assert max(counts) - min(counts) <= 1


def test_sticky_keeps_owners_and_moves_only_what_balance_needs() -> None:
    sticky = StickyAssignor()
    assert isinstance(sticky, SupportsSticky)
    parts = tps("t", 12)
    before = sticky.assign(members(3), parts)
    after = sticky.reassign(members(4), parts, before)
    moved = sum(1 for m, v in after.items() for tp in v if tp not in before.get(m, []))
    assert moved == 3  # 4,4,4 -> 3,3,3,3: exactly the new member's three
    assert [len(v) for v in after.values()] == [3, 3, 3, 3]
    # a member leaves: only its partitions move
    gone = {k: v for k, v in after.items() if k != "c1"}
    again = sticky.reassign([m for m in members(4) if m.member_id != "c1"], parts, gone)
    for mid, owned in gone.items():
        assert set(owned) <= set(again[mid])


def test_check_plan_rejects_double_and_missing_ownership() -> None:
    ms = members(2)
    with pytest.raises(ConfigurationError, match="both"):
        check_plan(
            {"c0": [TopicPartition("t", 0)], "c1": [TopicPartition("t", 0)]}, ms, tps("t", 1)
        )
    with pytest.raises(ConfigurationError, match="unassigned"):
        check_plan({"c0": [TopicPartition("t", 0)]}, ms, tps("t", 2))
    with pytest.raises(ConfigurationError, match="unknown member"):
        check_plan({"zz": tps("t", 1)}, ms, tps("t", 1))
    with pytest.raises(ConfigurationError, match="does not subscribe"):
        check_plan(
            {"c0": [TopicPartition("u", 0)]},
            [Member.of("c0", ["t"]), Member.of("c1", ["u"])],
            tps("u", 1),
        )


def test_static_members_are_ordered_by_instance_id_like_librdkafka() -> None:
    from sdk.assignors._builtin import librdkafka_order

    ms = [Member.of(f"m{'-' * i}-uuid{i}", ["t"], instance_id="m" + "-" * i) for i in range(3)]
    assert [m.instance_id for m in librdkafka_order(ms)] == ["m", "m-", "m--"]
    assert librdkafka_order(ms)[0].member_id == "m-uuid0"
    plan = RangeAssignor().assign(ms, tps("t", 7))
    assert nums(plan)["m-uuid0"] == [0, 1, 2]
    dynamic = [Member.of(m.member_id, ["t"]) for m in ms]  # without instance ids: member-id order
    assert nums(RangeAssignor().assign(dynamic, tps("t", 7)))["m---uuid2"] == [0, 1, 2]
