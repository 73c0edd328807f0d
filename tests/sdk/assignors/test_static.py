"""Static mode: processes with declared ids cover every partition once, no group protocol."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from sdk.assignors import StaticAssignedConsumer, TopicPartition, static_plan
from sdk.errors import ConfigurationError
from sdk.testing.backends import KafkaBackend
from tests.sdk.assignors._procs import Worker, produce, wait_for, workers

__all__ = ["workers"]

MEMBERS = ["node-a", "node-b", "node-c"]


def test_static_plan_is_shared_and_validated() -> None:
    parts = [TopicPartition("t", p) for p in range(7)]
    plan = static_plan("round_robin", MEMBERS, ["t"], parts)
    assert [len(v) for v in plan.values()] == [3, 2, 2]
    assert static_plan("round_robin", MEMBERS[::-1], ["t"], parts[::-1]) == plan
    with pytest.raises(ConfigurationError) as info:
        static_plan("range", ["a", "a"], ["t"], parts)
    assert info.value.field == "members"


def test_static_consumer_rejects_undeclared_id_and_group_keys() -> None:
    with pytest.raises(ConfigurationError) as a:
        StaticAssignedConsumer({}, ["t"], "range", members=MEMBERS, member_id="node-z")
    assert a.value.field == "member_id"
    with pytest.raises(ConfigurationError) as b:
        StaticAssignedConsumer(
            {"group.protocol": "consumer"}, ["t"], "range", members=MEMBERS, member_id="node-a"
        )
    assert b.value.field == "group.protocol"


@pytest.mark.broker
def test_three_declared_processes_cover_all_partitions_exactly_once(
    kafka_cluster: KafkaBackend,
    make_topic: Callable[..., str],
    make_group: Callable[..., str],
    workers: list[Worker],
    tmp_path: Path,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    partitions, per_partition = 10, 30
    topic = make_topic(partitions)
    group = make_group()
    produce(bootstrap, topic, partitions, per_partition, "static")
    for mid in MEMBERS:
        workers.append(
            Worker(
                "static",
                tmp_path / mid,
                bootstrap=bootstrap,
                group=group,
                topic=topic,
                assignor="lag_aware",
                members=MEMBERS,
                member_id=mid,
                deadline=120,
            )
        )
    expected = {(p, o) for p in range(partitions) for o in range(per_partition)}

    def all_consumed() -> bool:
        return expected <= {row for w in workers for row in w.log()}

    wait_for(all_consumed, 60, "all records consumed")
    states = [w.state() for w in workers]
    shares = [sorted(tuple(tp) for tp in s["share"]) for s in states if s]
    assert len(shares) == 3
    owned = Counter(tp for share in shares for tp in share)
    assert set(owned.values()) == {1} and len(owned) == partitions
    for s in states:
        assert s is not None and s["assignment"] == s["share"]
    rows = [row for w in workers for row in w.log()]
    assert sorted(rows) == sorted(expected)  # each record exactly once: no rebalance, no overlap
    for w, share in zip(workers, shares, strict=True):
        assert {p for p, _ in w.log()} == {p for _, p in share}
    # nobody joined a group: the coordinator sees no members (offsets are still committed)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    desc = admin.describe_consumer_groups([group])[group].result()
    assert desc.members == []
    print(
        f"static: {len(rows)} records over {partitions} partitions, shares "
        f"{[len(s) for s in shares]}, 0 duplicates"
    )
