"""A Python assignor on a real dynamic group: 3 processes, a 4th joins, one is SIGKILLed."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition
from confluent_kafka.admin import AdminClient

from sdk.assignors import Member, RackAwareAssignor, TopicPartition
from sdk.assignors._builtin import RangeAssignor
from sdk.testing.backends import KafkaBackend
from tests.sdk.assignors._procs import Worker, produce, wait_for, workers

pytestmark = pytest.mark.broker
__all__ = ["workers"]

PARTITIONS = 12
RACKS = "abc"
PER_PARTITION = 25  # records per partition per phase


class Trickle(threading.Thread):
    """Produces one record every 20 ms, round robin over the partitions, until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
        self.topic = topic
        self.stop = threading.Event()
        self.sent = 0
        self.error: str | None = None

    def run(self) -> None:
        def report(err: Any, msg: Any) -> None:
            if err is not None:
                self.error = str(err)

        n = 0
        while not self.stop.is_set():
            self.producer.produce(
                self.topic, b"trickle", partition=n % PARTITIONS, on_delivery=report
            )
            n += 1
            self.producer.poll(0.02)
        if self.producer.flush(30) != 0:
            self.error = "flush timed out"
        self.sent = n


def watermarks(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        return {
            p: consumer.get_watermark_offsets(KafkaTopicPartition(topic, p), timeout=10)[1]
            for p in range(PARTITIONS)
        }
    finally:
        consumer.close()


def stable_ownership(
    admin: AdminClient, group: str, topic: str, live: list[Worker]
) -> dict[str, Any] | None:
    """Return the plan when every live worker reports the same plan for the current members."""
    states = [w.state() for w in live]
    if any(s is None or not s.get("member") for s in states):
        return None
    desc = admin.describe_consumer_groups([group], request_timeout=10)[group].result()
    members = {s["member"]: s for s in states if s is not None}
    if desc.state != ConsumerGroupState.STABLE or {m.member_id for m in desc.members} != set(
        members
    ):
        return None
    plans = [s["plan"] for s in members.values()]
    if any(p != plans[0] for p in plans) or set(plans[0]) != set(members):
        return None
    for mid, s in members.items():
        if s["assignment"] != plans[0][mid] or s["share"] != plans[0][mid]:
            return None
    racks = {mid: s["rack"] for mid, s in members.items()}
    return {"plan": plans[0], "racks": racks}


def check_plan_is_the_assignors(seen: dict[str, Any], topic: str) -> Counter[int]:
    plan = {m: [TopicPartition(*tp) for tp in v] for m, v in seen["plan"].items()}
    owners = Counter(tp.partition for v in plan.values() for tp in v)
    assert sorted(owners) == list(range(PARTITIONS)) and set(owners.values()) == {1}, owners
    members = [Member.of(m, [topic], rack=r) for m, r in seen["racks"].items()]
    parts = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    assignor = RackAwareAssignor({tp: [RACKS[tp.partition % 3]] for tp in parts})
    assert plan == assignor.assign(members, parts)
    # the custom plan is not librdkafka's native one: the test would notice a native fallback
    assert plan != RangeAssignor().assign(members, parts)
    return owners


def test_custom_assignor_through_join_and_kill_owns_each_partition_once(
    kafka_cluster: KafkaBackend,
    make_topic: Callable[..., str],
    make_group: Callable[..., str],
    workers: list[Worker],
    tmp_path: Path,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = make_topic(PARTITIONS)
    group = make_group()
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def start(i: int, rack: str) -> Worker:
        w = Worker(
            "custom",
            tmp_path / f"c{i}",
            bootstrap=bootstrap,
            group=group,
            topic=topic,
            partitions=PARTITIONS,
            racks=RACKS,
            rack=rack,
            deadline=240,
        )
        workers.append(w)
        return w

    produce(bootstrap, topic, PARTITIONS, PER_PARTITION, "phase1")
    trickle = Trickle(bootstrap, topic)  # keeps producing through every rebalance
    trickle.start()
    live = [start(0, "a"), start(1, "b"), start(2, "c")]

    def diagnose() -> Any:
        desc = admin.describe_consumer_groups([group])[group].result()
        described = {m.member_id: m.client_id for m in desc.members}
        return {"group": (desc.state, described), "workers": [(w.alive(), w.state()) for w in live]}

    def settle(what: str) -> dict[str, Any]:
        check = lambda: stable_ownership(admin, group, topic, live)  # noqa: E731
        first = wait_for(check, 90, what, diagnose=diagnose)
        second = wait_for(check, 30, what, diagnose=diagnose)
        assert first == second
        check_plan_is_the_assignors(second, topic)
        return second

    three = settle("3 members stable")
    assert sorted(len(v) for v in three["plan"].values()) == [4, 4, 4]

    produce(bootstrap, topic, PARTITIONS, PER_PARTITION, "phase2")
    live.append(start(3, "a"))
    four = settle("4 members stable")
    assert sorted(len(v) for v in four["plan"].values()) == [3, 3, 3, 3]

    produce(bootstrap, topic, PARTITIONS, PER_PARTITION, "phase3")
    victim = live.pop(1)  # rack b: killed while records of phase 3 are in flight to it
    victim.kill()
    after = settle("3 members stable after SIGKILL")
    assert victim.state() is not None
    assert victim.state()["member"] not in after["plan"]  # type: ignore[index]

    trickle.stop.set()
    trickle.join(30)
    assert trickle.error is None, trickle.error
    high = watermarks(bootstrap, topic)
    assert sum(high.values()) == 3 * PARTITIONS * PER_PARTITION + trickle.sent
    expected = {(p, o) for p in range(PARTITIONS) for o in range(high[p])}

    def consumed() -> set[tuple[int, int]] | None:
        seen = {row for w in workers for row in w.log()}
        return seen if expected <= seen else None

    wait_for(consumed, 60, "every produced record consumed")
    rows = [row for w in workers for row in w.log()]
    counts = Counter(rows)
    assert set(counts) == expected  # nothing lost, nothing foreign
    duplicates = sum(c - 1 for c in counts.values())
    superseded = sum((w.state() or {}).get("superseded", 0) for w in workers)
    print(
        f"custom group: {len(expected)} records ({trickle.sent} produced during rebalances), "
        f"{len(rows)} processed, {duplicates} duplicates; "
        f"plans 4/4/4 -> 3/3/3/3 -> {sorted(len(v) for v in after['plan'].values())}; "
        f"{superseded} assignments superseded"
    )
