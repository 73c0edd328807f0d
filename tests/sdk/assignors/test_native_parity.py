"""Python range/round_robin plans == librdkafka's actual assignment on real groups of processes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupState
from confluent_kafka.admin import AdminClient

from sdk.assignors import Member, TopicPartition, resolve_assignor
from sdk.testing.backends import KafkaBackend
from tests.sdk.assignors._procs import Worker, wait_for, workers

pytestmark = pytest.mark.broker
__all__ = ["workers"]

# (label, partitions per topic, consumers, static members). Static members get group.instance.id
# "m", "m-", "m--": the broker makes member ids "<instance id>-<uuid>", which sort in the
# opposite order ("m---…" < "m--…" < "m-…"), so only the instance-id rule gives the right plan.
SHAPES = [
    ("8p/3c", [8], 3, False),
    ("10p/4c", [10], 4, False),
    ("3p+5p/3c", [3, 5], 3, False),
    ("7p/3c static", [7], 3, True),
]
STRATEGIES = {"range": "range", "roundrobin": "round_robin"}


def test_python_plans_equal_librdkafka_assignment(
    kafka_cluster: KafkaBackend,
    make_topic: Callable[..., str],
    make_group: Callable[..., str],
    workers: list[Worker],
    tmp_path: Path,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    groups: dict[str, dict[str, Any]] = {}
    for label, counts, consumers, static in SHAPES:
        topics = [make_topic(n) for n in counts]
        for native, python_name in STRATEGIES.items():
            groups[make_group()] = {
                "label": f"{label} {native}",
                "topics": topics,
                "counts": counts,
                "consumers": consumers,
                "native": native,
                "python": python_name,
                "static": static,
            }
    for i in range(max(c for _, _, c, _ in SHAPES)):
        specs = [
            {
                "group": g,
                "topics": s["topics"],
                "strategy": s["native"],
                "instance_id": "m" + "-" * i if s["static"] else None,
            }
            for g, s in groups.items()
            if s["consumers"] > i
        ]
        workers.append(
            Worker("native", tmp_path / f"w{i}", bootstrap=bootstrap, specs=specs, deadline=180)
        )
    admin = AdminClient({"bootstrap.servers": bootstrap})

    instance_ids: dict[str, str | None] = {}

    def observed() -> dict[str, dict[str, list[TopicPartition]]] | None:
        states = [w.state() for w in workers]
        if any(s is None for s in states):
            return None
        futures = admin.describe_consumer_groups(list(groups), request_timeout=10)
        result = {}
        for g, spec in groups.items():
            desc = futures[g].result()
            described = {
                m.member_id: sorted(
                    TopicPartition(tp.topic, tp.partition) for tp in m.assignment.topic_partitions
                )
                for m in desc.members
            }
            instance_ids.update({m.member_id: m.group_instance_id for m in desc.members})
            seen = {
                s[g]["member"]: sorted(TopicPartition(*tp) for tp in s[g]["assignment"])
                for s in states
                if s is not None and g in s
            }
            if (
                desc.state != ConsumerGroupState.STABLE
                or len(seen) != spec["consumers"]
                or seen != described
            ):
                return None
            result[g] = seen
        return result

    first = wait_for(observed, 90, "every group stable with all members' assignments reported")
    second = wait_for(observed, 30, "a second stable observation")
    assert first == second, "assignments changed between two stable observations"
    for g, spec in groups.items():
        actual = second[g]
        members = [Member.of(mid, spec["topics"], instance_id=instance_ids[mid]) for mid in actual]
        if spec["static"]:
            assert all(instance_ids[mid] for mid in actual)
        partitions = [
            TopicPartition(t, p)
            for t, n in zip(spec["topics"], spec["counts"], strict=True)
            for p in range(n)
        ]
        plan = resolve_assignor(spec["python"]).assign(members, partitions)
        assert plan == actual, f"{spec['label']}: python {plan} != librdkafka {actual}"
        sizes = sorted((len(v) for v in actual.values()), reverse=True)
        print(f"{spec['label']}: librdkafka == python, partitions per member {sizes}")
