from __future__ import annotations

from sdk.assignors import LagAwareAssignor, Member, RackAwareAssignor, TopicPartition, check_plan


def tp(p: int) -> TopicPartition:
    return TopicPartition("t", p)


def test_lag_aware_balances_total_lag_not_counts() -> None:
    lags = {tp(0): 1000, tp(1): 10, tp(2): 10, tp(3): 10, tp(4): 900, tp(5): 5}
    ms = [Member.of("a", ["t"]), Member.of("b", ["t"])]
    parts = [tp(p) for p in range(6)]
    plan = LagAwareAssignor(lags).assign(ms, parts)
    check_plan(plan, ms, parts)
    total = {m: sum(lags[x] for x in v) for m, v in plan.items()}
    assert plan["a"] == [tp(0)] or plan["b"] == [tp(0)]  # the hot partition is alone
    assert abs(total["a"] - total["b"]) <= 100
    # without lags it degrades to a count-balanced plan
    even = LagAwareAssignor().assign(ms, parts)
    assert [len(v) for v in even.values()] == [3, 3]


def test_lag_aware_is_deterministic_for_the_same_snapshot() -> None:
    lags = {tp(p): (p * 37) % 11 for p in range(20)}
    ms = [Member.of(f"m{i}", ["t"]) for i in range(4)]
    parts = [tp(p) for p in range(20)]
    a = LagAwareAssignor(lags).assign(ms, parts)
    b = LagAwareAssignor(dict(reversed(list(lags.items())))).assign(ms[::-1], parts[::-1])
    assert a == b


def test_rack_aware_prefers_local_replicas_within_balance() -> None:
    racks = {tp(p): ["abc"[p % 3]] for p in range(12)}
    ms = [Member.of(f"m-{r}", ["t"], rack=r) for r in "abc"]
    parts = [tp(p) for p in range(12)]
    plan = RackAwareAssignor(racks).assign(ms, parts)
    check_plan(plan, ms, parts)
    for m in ms:
        assert all(racks[x] == [m.rack] for x in plan[m.member_id])
    assert [len(v) for v in plan.values()] == [4, 4, 4]


def test_rack_aware_falls_back_when_a_rack_has_no_member_and_keeps_balance() -> None:
    racks = {tp(p): ["abcd"[p % 4]] for p in range(12)}  # rack d has no member
    ms = [Member.of(f"m-{r}", ["t"], rack=r) for r in "abc"]
    parts = [tp(p) for p in range(12)]
    plan = RackAwareAssignor(racks).assign(ms, parts)
    check_plan(plan, ms, parts)
    assert sorted(len(v) for v in plan.values()) == [4, 4, 4]
    local = sum(1 for m in ms for x in plan[m.member_id] if racks[x] == [m.rack])
    assert local == 9  # every partition with a local member got it
    # no racks at all: balanced
    assert [len(v) for v in RackAwareAssignor().assign(ms, parts).values()] == [4, 4, 4]


def test_examples_give_valid_deterministic_plans_on_random_groups() -> None:
    import random

    rng = random.Random(11)
    for _ in range(100):
        topics = [f"t{i}" for i in range(rng.randint(1, 3))]
        ms = [
            Member.of(
                f"m{i}", rng.sample(topics, rng.randint(1, len(topics))), rack=rng.choice("abc")
            )
            for i in range(rng.randint(1, 5))
        ]
        parts = [TopicPartition(t, p) for t in topics for p in range(rng.randint(1, 9))]
        subscribed = [x for x in parts if any(x.topic in m.topics for m in ms)]
        lags = {x: rng.randint(0, 1000) for x in parts}
        racks = {x: rng.sample("abc", 2) for x in parts}
        for assignor in (LagAwareAssignor(lags), RackAwareAssignor(racks)):
            plan = assignor.assign(ms, parts)
            assert check_plan(plan, ms, parts) == plan
            assert plan == assignor.assign(ms[::-1], parts[::-1])
            assert sum(len(v) for v in plan.values()) == len(subscribed)
