"""Rolling-restart checks: the verdict as a pure function, then on the real 3-node cluster.

The cluster tests stop and restart brokers of the shared ``kafka_cluster3``; each leaves it as
it found it (every broker running, every replica in sync), failed or not.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource
from confluent_kafka.admin._resource import ResourceType

from sdk.doctor import _restart
from sdk.doctor._restart import (
    OFFLINE,
    below_min_isr,
    elect_preferred_leaders,
    judge,
    main,
    preferred_leaders,
    restart_check,
    wait_until_safe,
)
from sdk.doctor._restart_read import ClusterState, PartitionState, admin_config_from_profile
from sdk.errors import BrokerUnreachableError, ConfigurationError, KafkaTimeoutError
from sdk.testing.admin import delete_topic
from sdk.testing.backends import KafkaBackend
from sdk.testing.cluster import LocalCluster
from sdk.testing.pytest_plugin import require_local
from tests.sdk.processor._support import wait_for

ROOT = Path(__file__).resolve().parents[3]


def _p(
    isr: tuple[int, ...], replicas: tuple[int, ...] = (1, 2, 3), min_isr: int = 2
) -> PartitionState:
    return PartitionState("t", 0, isr[0] if isr else -1, replicas, isr, min_isr)


def _state(
    *partitions: PartitionState, brokers: tuple[int, ...] = (1, 2, 3), **kw: Any
) -> ClusterState:
    return ClusterState(brokers=brokers, controller_id=1, partitions=partitions, **kw)


# stop broker 2 | partition (ISR, replicas, min ISR) | why it is at risk (None: not)
CASES = [
    ("full ISR, RF 3, min 2", _p((1, 2, 3)), None),
    ("ISR {2,3}, min 2", _p((2, 3)), below_min_isr(1, 2)),
    ("ISR {2}, min 1", _p((2,), min_isr=1), OFFLINE),
    ("ISR {2}, min 2", _p((2,)), OFFLINE),
    ("RF 1 on broker 2", _p((2,), replicas=(2,), min_isr=1), OFFLINE),
    ("RF 2, min 1, ISR {1,2}", _p((1, 2), replicas=(1, 2), min_isr=1), None),
    ("RF 3, min 3, full ISR", _p((1, 2, 3), min_isr=3), below_min_isr(2, 3)),
    ("broker 2 already out of the ISR", _p((1, 3)), None),
    ("broker 2 not a replica", _p((1, 3), replicas=(1, 3)), None),
]


@pytest.mark.parametrize(("case", "partition", "why"), CASES, ids=[c[0] for c in CASES])
def test_judge_table(case: str, partition: PartitionState, why: str | None) -> None:
    verdict = judge(_state(partition), 2)
    assert verdict.safe is (why is None)
    assert [r.why for r in verdict.at_risk] == ([why] if why else [])
    assert verdict.caught_up is (2 not in partition.replicas or partition.fully_in_sync)


def test_judge_counts_and_lagging() -> None:
    state = _state(_p((1, 2, 3)), PartitionState("u", 1, 1, (1, 2, 3), (1, 3), 2))
    verdict = judge(state, 2)
    assert verdict.safe and not verdict.caught_up
    assert [p.name for p in verdict.lagging] == ["u[1]"]
    assert (verdict.hosted, verdict.leads, verdict.broker_running) == (2, 0, True)
    assert "1 of its 2 partitions under-replicated" in verdict.summary()


def test_judge_quorum_of_combined_nodes() -> None:
    # node 2 is down (it holds replicas, so it is a broker, not a hidden controller)
    state = _state(_p((1, 3)), brokers=(1, 3), quorum_voters=(1, 2, 3), controller_roles=True)
    verdict = judge(state, 1)
    assert not verdict.safe
    assert verdict.quorum_risk is not None and "1 of 3 voters left, 2 needed" in verdict.quorum_risk


def test_judge_dedicated_controllers_are_not_the_brokers_business() -> None:
    state = _state(_p((1, 2, 3)), quorum_voters=(10, 11, 12), controller_roles=False)
    assert judge(state, 1).quorum_risk is None


def test_judge_unknown_broker() -> None:
    with pytest.raises(ConfigurationError, match="broker 9 is not in the cluster") as info:
        judge(_state(_p((1, 2, 3))), 9)
    assert info.value.field == "broker"


def test_wait_until_safe_retries_and_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[Any] = [
        BrokerUnreachableError("reading the cluster metadata: all brokers down"),
        _state(_p((2, 3)), brokers=(2, 3)),
        _state(_p((1, 2, 3), min_isr=2), PartitionState("u", 0, 1, (1, 2, 3), (1, 3), 2)),
        _state(_p((1, 2, 3))),
    ]

    def read(*_a: Any, **_k: Any) -> ClusterState:
        got = reads.pop(0)
        if isinstance(got, Exception):
            raise got
        return got  # type: ignore[no-any-return]

    monkeypatch.setattr(_restart, "read_cluster_state", read)
    lines: list[str] = []
    verdict = wait_until_safe(
        "ignored:1", 2, 10, poll_s=0.01, progress=lambda s: lines.append(s.line)
    )
    assert verdict.ready and not reads
    assert "cluster not readable" in lines[0]
    assert "1 partition(s) at risk (t[0])" in lines[1]
    assert "1 under-replicated (u[0] ISR 1,3 of 1,2,3)" in lines[2]
    assert "safe, all its partitions in sync" in lines[3]


def test_wait_until_safe_times_out_naming_what_is_in_the_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        _restart, "read_cluster_state", lambda *a, **k: _state(_p((2, 3)), brokers=(2, 3))
    )
    with pytest.raises(KafkaTimeoutError, match=r"broker 2 not ready after 0.2s.*t\[0\]"):
        wait_until_safe("ignored:1", 2, 0.2, poll_s=0.05)


def test_wait_until_safe_refuses_to_wait_for_what_waiting_cannot_fix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rf1 = PartitionState("logs", 0, 2, (2,), (2,), 1)
    monkeypatch.setattr(_restart, "read_cluster_state", lambda *a, **k: _state(_p((1, 2, 3)), rf1))
    started = time.monotonic()
    with pytest.raises(ConfigurationError, match=r"logs\[0\] \(1 replica\(s\), min.insync"):
        wait_until_safe("ignored:1", 2, 60, poll_s=0.01)
    assert time.monotonic() - started < 5


def test_cli_without_cluster_or_with_bad_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["restart-check"]) == 2  # --broker missing: argparse's usage error
    assert main(["preferred-leaders", "--profile", "x"]) == 2
    assert "--profile needs --file" in capsys.readouterr().err
    assert (
        main(
            [
                "restart-check",
                "--broker",
                "1",
                "--bootstrap-servers",
                "127.0.0.1:1",
                "--timeout-s",
                "1",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err.startswith("error: reading the cluster metadata:") and "Traceback" not in err


def test_connection_from_a_profile(tmp_path: Path) -> None:
    path = tmp_path / "profiles.yaml"
    path.write_text(
        "defaults: {bootstrap_servers: 'h1:9092,h2:9092'}\n"
        "profiles:\n"
        "  orders: {guarantee: at_least_once, security: {protocol: SASL_SSL,"
        " sasl_mechanism: PLAIN, sasl_username: u, sasl_password: p},"
        " producer: {linger_ms: 5, extras: {ssl.endpoint.identification.algorithm: none}}}\n"
        "  jobs: at_most_once\n"
    )
    config = admin_config_from_profile(str(path), "orders")
    assert config["bootstrap.servers"] == "h1:9092,h2:9092"
    assert config["security.protocol"] == "SASL_SSL" and config["sasl.password"] == "p"
    assert config["ssl.endpoint.identification.algorithm"] == "none"  # TLS extras kept ...
    assert "linger.ms" not in config  # ... the rest is the producer's business
    with pytest.raises(ConfigurationError, match="name one with --profile: jobs, orders"):
        admin_config_from_profile(str(path), None)


# ---------------------------------------------------------------- the real 3-node cluster


def _min_isr(admin: AdminClient, topics: list[str]) -> dict[str, int]:
    """Each topic's min.insync.replicas, read independently of the module under test."""
    resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
    futures = admin.describe_configs(resources)
    return {r.name: int(f.result(30)["min.insync.replicas"].value) for r, f in futures.items()}


def _isrs(admin: AdminClient) -> dict[tuple[str, int], tuple[list[int], list[int], int]]:
    meta = admin.list_topics(timeout=30)
    return {
        (name, p.id): (list(p.replicas), list(p.isrs), p.leader)
        for name, t in meta.topics.items()
        for p in t.partitions.values()
    }


def _commit_offsets(bs: str, topic: str) -> None:
    consumer = Consumer({"bootstrap.servers": bs, "group.id": f"doctor-{topic}"})
    try:
        consumer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)
    finally:
        consumer.close()


@pytest.fixture
def cluster3(kafka_cluster3: KafkaBackend) -> Iterator[LocalCluster]:
    """The shared 3-node cluster, whole before the test and whole again after it."""
    cluster = require_local(kafka_cluster3)
    _make_whole(cluster)
    try:
        yield cluster
    finally:
        _make_whole(cluster)


def _make_whole(cluster: LocalCluster) -> None:
    for node in cluster.node_ids:
        if cluster.state_of(node).name != "RUNNING":
            cluster.restart(node)
    for node in cluster.node_ids:  # caught up; not "safe": a topic of RF 1 never is
        wait_for(
            lambda n=node: restart_check(cluster.bootstrap_servers, n).caught_up,
            180,
            f"node {node}'s partitions in sync",
        )


@pytest.mark.cluster
def test_restart_check_with_one_broker_down(
    cluster3: LocalCluster, make_topic: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    bs = cluster3.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    topic = make_topic(
        6, cluster=cluster3, replication_factor=3, config={"min.insync.replicas": "2"}
    )
    first, second, third = cluster3.node_ids
    _commit_offsets(bs, topic)  # __consumer_offsets exists: internal topics are judged too

    for node in cluster3.node_ids:  # all up: any one may go
        verdict = restart_check(bs, node)
        assert verdict.safe and verdict.caught_up and not verdict.at_risk, verdict.summary()
    read = verdict.state
    assert read.min_isr[topic] == 2 and read.min_isr_source[topic] == "topic"
    assert set(read.min_isr) == {t for t, _ in _isrs(admin)}  # internal topics too
    assert read.quorum_voters == (1, 2, 3) and read.controller_roles

    cluster3.stop(first)
    wait_for(
        lambda: all(first not in isr for _, isr, _ in _isrs(admin).values()),
        60,
        f"node {first} out of every ISR",
    )
    verdict = restart_check(bs, second)
    assert not verdict.safe
    # the oracle: every partition whose ISR is {second, third}, from the metadata read here
    now = _isrs(admin)
    min_isr = _min_isr(admin, sorted({t for t, _ in now}))
    expected = {
        key for key, (_, isr, _) in now.items() if second in isr and len(isr) - 1 < min_isr[key[0]]
    }
    assert {(r.topic, r.partition) for r in verdict.at_risk} == expected
    assert {(topic, p) for p in range(6)} <= expected
    assert {r.why for r in verdict.at_risk if r.topic == topic} == {below_min_isr(1, 2)}
    assert any(r.topic == "__consumer_offsets" for r in verdict.at_risk)
    assert verdict.quorum_risk is not None  # 3 combined nodes: 2 down lose the quorum
    assert not restart_check(bs, first).broker_running

    assert main(["restart-check", "--broker", str(second), "--bootstrap-servers", bs]) == 1
    out = capsys.readouterr().out
    assert f"broker {second} may NOT be stopped now" in out
    assert all(f"{topic}[{p}]" in out for p in range(6))
    assert "ISR would fall below min.insync.replicas (1 < 2)" in out
    assert f"({first} not)" in out

    # --wait, started while the first broker is still down, returns once it caught up
    waiting = subprocess.Popen(
        [sys.executable, "-m", "sdk.doctor._restart", "restart-check", "--broker",
         str(second), "--wait", "--timeout-s", "180", "--bootstrap-servers", bs],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        time.sleep(3.0)
        assert waiting.poll() is None, "--wait returned while a broker was down"
        t0 = time.monotonic()
        cluster3.restart(first)
        out, err = waiting.communicate(timeout=180)
    finally:
        if waiting.poll() is None:
            waiting.kill()
            waiting.wait()
    assert waiting.returncode == 0, (out, err)
    print(f"--wait returned {time.monotonic() - t0:.1f}s after the restart began\n{err}{out}")
    assert "partition(s) at risk" in err.splitlines()[0]
    assert f"broker {second} may be stopped now" in out and "waited" in out
    verdict = restart_check(bs, second)
    assert verdict.safe and verdict.caught_up

    # and it is: with the second broker stopped, acks=all writes to the topic go on
    cluster3.stop(second)
    producer = Producer({"bootstrap.servers": bs, "acks": "all", "message.timeout.ms": 30000})
    failed: list[Any] = []
    for i in range(60):
        producer.produce(
            topic, str(i).encode(), partition=i % 6, on_delivery=lambda e, _m: failed.append(e)
        )
    assert producer.flush(60) == 0
    assert failed == [None] * 60
    cluster3.restart(second)
    wait_until_safe(bs, third, 180)


@pytest.mark.cluster
def test_a_partition_with_one_replica_would_go_offline(
    cluster3: LocalCluster, make_topic: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    topic = make_topic(1, cluster=cluster3, replication_factor=1)
    try:
        leader = cluster3.leader_of(topic, 0)
        verdict = restart_check(cluster3.bootstrap_servers, leader)
        assert not verdict.safe
        assert (topic, 0, OFFLINE) in verdict.at_risk
        argv = ["restart-check", "--broker", str(leader), "--wait", "--bootstrap-servers"]
        assert main([*argv, cluster3.bootstrap_servers]) == 1  # at once: waiting cannot help
        out, err = capsys.readouterr()
        assert f"{topic}[0]" in out and "however long one waits" in err
    finally:  # an RF 1 topic left behind would make every later restart of its node unsafe
        delete_topic(cluster3.bootstrap_servers, topic)


@pytest.mark.cluster
def test_preferred_leaders_after_a_restart_and_an_election(
    cluster3: LocalCluster, make_topic: Callable[..., str], capsys: pytest.CaptureFixture[str]
) -> None:
    bs = cluster3.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bs})
    make_topic(6, cluster=cluster3, replication_factor=3)
    node = cluster3.node_ids[0]
    cluster3.stop(node)  # a controlled shutdown moves its leaders away ...
    cluster3.restart(node)  # ... and it comes back leading nothing
    wait_until_safe(bs, node, 180)

    report = preferred_leaders(bs)
    independent = {
        key for key, (replicas, _, leader) in _isrs(admin).items() if leader != replicas[0]
    }
    assert {(p.topic, p.partition) for p in report} == independent
    assert main(["preferred-leaders", "--bootstrap-servers", bs, "--json"]) == (1 if report else 0)
    listed = json.loads(capsys.readouterr().out)["not_preferred"]
    print(f"{len(report)} partitions not led by their preferred replica after the restart")
    assert {(p["topic"], p["partition"]) for p in listed} == independent

    results = elect_preferred_leaders(bs)
    assert {(r.topic, r.partition) for r in results} == independent
    assert all(r.error is None for r in results), results
    assert preferred_leaders(bs) == []
    assert all(leader == replicas[0] for replicas, _, leader in _isrs(admin).values())
    assert main(["preferred-leaders", "--bootstrap-servers", bs]) == 0
    assert "every partition is led by its preferred replica" in capsys.readouterr().out
