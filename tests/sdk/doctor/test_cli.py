"""``python -m sdk doctor NAME --file F [--topic T ...] [--json]`` on the 1-node cluster."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from sdk.__main__ import main

pytestmark = pytest.mark.broker


def profiles(tmp_path: Path, bootstrap: str) -> Path:
    path = tmp_path / "profiles.yaml"
    path.write_text(
        "defaults:\n"
        f"  bootstrap_servers: {bootstrap}\n"
        "profiles:\n"
        "  events: at_least_once\n"
        "  orders:\n"
        "    guarantee: exactly_once\n"
        "    group_id: orders-service\n"
        "    transactional_id_prefix: orders-\n"
        "    transaction_timeout_ms: 1000000\n"
        "  jobs:\n"
        "    guarantee: at_least_once\n"
        "    group_id: jobs-workers\n"
        "    queue: {record_lock_duration_ms: 30000}\n"
    )
    return path


def test_warnings_exit_0_and_a_failure_exits_1(
    kafka_cluster: Any,
    make_topic: Callable[..., str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = profiles(tmp_path, kafka_cluster.bootstrap_servers)
    topic = make_topic(1)
    unclean = make_topic(1, config={"unclean.leader.election.enable": "true"})
    assert main(["doctor", "events", "--file", str(path), "--topic", topic]) == 0
    out = capsys.readouterr().out
    assert out.startswith("doctor: profile 'events' (producer, at_least_once) on cluster ")
    assert f"WARN  topic {topic}: replication" in out and "0 FAIL, 1 WARN" in out
    status = main(["doctor", "events", "--file", str(path), "--topic", topic, "--topic", unclean])
    out = capsys.readouterr().out
    assert status == 1
    assert f"FAIL  topic {unclean}: unclean leader election" in out
    assert "unclean.leader.election.enable=false" in out  # the fix


def test_json_for_scripts(
    kafka_cluster: Any,
    make_topic: Callable[..., str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = profiles(tmp_path, kafka_cluster.bootstrap_servers)
    topic = make_topic(1)
    status = main(["doctor", "orders", "--file", str(path), "--topic", topic, "--json"])
    data = json.loads(capsys.readouterr().out)
    assert status == 1
    assert (data["profile"], data["kind"], data["guarantee"]) == (
        "orders",
        "processing",
        "exactly_once",
    )
    assert data["ok"] is False and data["counts"]["FAIL"] == 1
    failed = [c for c in data["checks"] if c["status"] == "FAIL"]
    assert [c["name"] for c in failed] == ["transaction timeout"]
    assert set(failed[0]) == {"name", "status", "found", "why", "fix"}
    assert main(["doctor", "jobs", "--file", str(path), "--kind", "queue", "--json"]) == 0
    queue = json.loads(capsys.readouterr().out)
    assert queue["kind"] == "queue"
    assert {"share groups", "share-group limits"} <= {c["name"] for c in queue["checks"]}


def test_python_dash_m_sdk_doctor(
    kafka_cluster: Any, make_topic: Callable[..., str], tmp_path: Path
) -> None:
    path = profiles(tmp_path, kafka_cluster.bootstrap_servers)
    topic = make_topic(1)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "sdk", "doctor", "events", "--file", str(path), "--topic", topic],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    took = time.monotonic() - started
    print(f"python -m sdk doctor: exit {proc.returncode} in {took:.2f}s\n{proc.stdout}")
    assert proc.returncode == 0, proc.stderr
    assert "brokers reachable" in proc.stdout
    assert proc.stderr == ""  # librdkafka's log lines go to the (silent) sdk.doctor logger
