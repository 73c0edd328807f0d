"""The local cluster against real brokers: start, round trips, transactions, faults, teardown."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from sdk.testing.admin import create_topic
from sdk.testing.backends import KafkaBackend
from sdk.testing.cluster import LocalCluster, NodeState
from sdk.testing.errors import BrokerStartError, JavaNotFoundError, PortInUseError
from sdk.testing.pytest_plugin import require_local


def _java_pids(marker: str = "") -> set[int]:
    """Broker processes; with ``marker``, only those whose command line contains it."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"kafka.Kafka" in cmdline and marker.encode() in cmdline:
                pids.add(int(entry.name))
    return pids


def _consume(bootstrap: str, topic: str, count: int, timeout: float = 60.0) -> list[bytes]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(values) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            values.append(msg.value())
    consumer.close()
    return values


def _round_trip(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(10):
        producer.produce(topic, value=f"r{i}".encode())
    assert producer.flush(30) == 0
    # Null keys spread over partitions (sticky), so order holds per partition only.
    assert sorted(_consume(bootstrap, topic, 10)) == sorted(f"r{i}".encode() for i in range(10))


def _transaction_commits(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": uuid.uuid4().hex})
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(topic, value=b"aborted")
    producer.abort_transaction(60)
    producer.begin_transaction()
    producer.produce(topic, value=b"committed")
    producer.commit_transaction(60)
    # read_committed sees only the committed record
    assert _consume(bootstrap, topic, 2, timeout=10) == [b"committed"]


@pytest.mark.broker
def test_one_node_round_trip_and_transaction(
    kafka_cluster: KafkaBackend, make_topic: Callable[..., str]
) -> None:
    _round_trip(kafka_cluster.bootstrap_servers, make_topic(1))
    _transaction_commits(kafka_cluster.bootstrap_servers, make_topic(1))


@pytest.mark.cluster
def test_three_node_round_trip_and_transaction(
    kafka_cluster3: KafkaBackend, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(3, cluster=kafka_cluster3)
    _round_trip(kafka_cluster3.bootstrap_servers, topic)
    _transaction_commits(kafka_cluster3.bootstrap_servers, make_topic(1, cluster=kafka_cluster3))


@pytest.mark.cluster
def test_acks_all_writes_continue_after_leader_kill(kafka_cluster3: KafkaBackend) -> None:
    cluster = require_local(kafka_cluster3)
    topic = create_topic(
        cluster.bootstrap_servers, f"kill-{uuid.uuid4().hex[:8]}", 1, replication_factor=3
    )
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "all",
            "enable.idempotence": True,
            "message.timeout.ms": 60000,
        }
    )
    failed: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failed.append(str(err))

    for i in range(100):
        producer.produce(topic, value=f"before-{i}".encode(), on_delivery=on_delivery)
    assert producer.flush(30) == 0 and not failed
    leader = cluster.leader_of(topic, 0)
    cluster.kill(leader)
    assert cluster.state_of(leader) is NodeState.STOPPED
    try:
        new_leader = cluster.leader_of(topic, 0, timeout_s=60, exclude=leader)
        assert new_leader != leader
        for i in range(100):
            producer.produce(topic, value=f"after-{i}".encode(), on_delivery=on_delivery)
        assert producer.flush(90) == 0
        assert not failed, failed
    finally:
        cluster.restart(leader)  # leave the shared cluster whole
    values = _consume(cluster.bootstrap_servers, topic, 200)
    assert len(values) == 200 and len(set(values)) == 200


@pytest.mark.cluster
def test_pause_and_resume(kafka_cluster3: KafkaBackend) -> None:
    cluster = require_local(kafka_cluster3)
    node = cluster.node_ids[-1]
    cluster.pause(node)
    try:
        assert cluster.state_of(node) is NodeState.PAUSED
        stat = Path(f"/proc/{cluster.pids()[node]}/stat").read_text().split()[2]
        assert stat == "T", f"a paused JVM is stopped (T), got {stat}"
        with socket.create_connection(("127.0.0.1", cluster.port_of(node)), timeout=2) as s:
            s.settimeout(1.0)
            s.sendall(b"\x00\x00\x00\x00")  # no answer comes from a frozen broker
            with pytest.raises(TimeoutError):
                s.recv(1)
    finally:
        cluster.resume(node)
    assert cluster.state_of(node) is NodeState.RUNNING
    _round_trip(
        cluster.bootstrap_servers,
        create_topic(cluster.bootstrap_servers, f"p-{uuid.uuid4().hex[:8]}", 1),
    )


@pytest.mark.broker
def test_teardown_leaves_no_java_process(tmp_path: Path) -> None:
    before = _java_pids()
    cluster = LocalCluster(1, workdir=tmp_path / "c").start()
    mine = set(p for p in cluster.pids().values() if p)
    assert mine and mine <= _java_pids() - before
    cluster.pause(1)  # even a frozen broker must go
    cluster.close(grace_s=5)
    assert not (mine & _java_pids())
    assert cluster.state_of(1) is NodeState.STOPPED


@pytest.mark.broker
def test_stop_and_restart_keep_data(tmp_path: Path) -> None:
    with LocalCluster(1, workdir=tmp_path / "c") as cluster:
        topic = create_topic(cluster.bootstrap_servers, "keep", 1)
        _round_trip(cluster.bootstrap_servers, topic)
        cluster.stop(1)
        assert cluster.state_of(1) is NodeState.STOPPED
        cluster.restart(1)
        assert len(_consume(cluster.bootstrap_servers, topic, 10)) == 10


@pytest.mark.broker
def test_broker_restarted_from_a_thread_outlives_that_thread(tmp_path: Path) -> None:
    # PR_SET_PDEATHSIG fires when the forking *thread* ends, not the process:
    # a broker restarted by a fault-injection thread used to be SIGKILLed as that thread ended.
    with LocalCluster(1, workdir=tmp_path / "c") as cluster:
        cluster.kill(1)
        errors: list[BaseException] = []

        def restart() -> None:
            try:
                cluster.restart(1)
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=restart, name="fault-injector")
        thread.start()
        thread.join(120)
        assert not thread.is_alive() and not errors, errors
        time.sleep(3)  # the old broker was gone within milliseconds of the thread's end
        assert cluster.state_of(1) is NodeState.RUNNING
        assert cluster.pids()[1] in _java_pids(str(tmp_path))
        _round_trip(cluster.bootstrap_servers, create_topic(cluster.bootstrap_servers, "t", 1))


@pytest.mark.broker
def test_port_clash_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(PortInUseError, match=f"Port {port} on 127.0.0.1 is already in use"):
            LocalCluster(1, ports=[port], workdir=tmp_path / "c").start()


@pytest.mark.broker
def test_broker_crash_during_start_shows_log_tail(tmp_path: Path) -> None:
    with pytest.raises(BrokerStartError) as info:
        LocalCluster(1, heap="1m", workdir=tmp_path / "c").start()
    message = str(info.value)
    assert "exited during start" in message
    assert "heap" in message.lower(), "the JVM's own complaint (log tail) is in the message"
    assert not _java_pids(str(tmp_path)), "a broker of this cluster survived"


def test_missing_java_fails_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(JavaNotFoundError, match="Could not run"):
        LocalCluster(1, java=str(tmp_path / "nope"), workdir=tmp_path / "c").start()


@pytest.mark.broker
def test_cli_up_status_down(tmp_path: Path) -> None:
    env = {**os.environ, "KAFKA_SEMANTICS_CACHE_DIR": str(tmp_path)}
    # share the already-resolved jars: the CLI test is about the CLI, not about Maven
    from sdk.testing.tools import cache_root

    for jar_dir in cache_root().glob("kafka-*"):
        (tmp_path / jar_dir.name).symlink_to(jar_dir)
    cli = [sys.executable, "-m", "sdk.testing.cluster"]
    name = ["--name", "clitest"]
    up = subprocess.run([*cli, "up", *name], env=env, capture_output=True, text=True, timeout=180)
    assert up.returncode == 0, up.stderr
    bootstrap = up.stdout.strip()
    assert bootstrap.startswith("127.0.0.1:")
    workdir = tmp_path / "clusters" / "clitest"
    pids = {p for p in LocalCluster.attach(workdir).pids().values() if p}
    assert pids and pids <= _java_pids()
    try:
        status = subprocess.run(
            [*cli, "status", *name], env=env, capture_output=True, text=True, timeout=60
        )
        assert status.returncode == 0 and "node 1: running" in status.stdout
        topic = create_topic(bootstrap, "cli", 1)
        _round_trip(bootstrap, topic)
        again = subprocess.run(
            [*cli, "up", *name], env=env, capture_output=True, text=True, timeout=60
        )
        assert again.returncode == 1 and "already running" in again.stderr
    finally:
        down = subprocess.run(
            [*cli, "down", *name], env=env, capture_output=True, text=True, timeout=120
        )
    assert down.returncode == 0, down.stderr
    assert not (pids & _java_pids()), "down left broker processes behind"


def test_cluster_ids_never_look_like_options() -> None:
    from sdk.testing.cluster._local import _new_cluster_id

    ids = [_new_cluster_id() for _ in range(5000)]  # ~78 would start with "-" unguarded
    assert not any(i.startswith("-") for i in ids)
    assert all(len(i) == 22 for i in ids)
