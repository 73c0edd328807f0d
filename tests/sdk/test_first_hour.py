"""A broker that is not there, and Ctrl-C: each front end's ``run()`` in a real process.

* An address where nothing listens: every front end raises ``BrokerUnreachableError`` within
  its bound (``socket.connection.setup.timeout.ms``), the message names the address and what
  the last attempt met, and the process prints a bounded number of log lines (librdkafka
  alone printed about 19 a second before they were collapsed).
* Ctrl-C with no broker: the run returns, exit 0, no traceback (confluent-kafka 2.16 turned a
  KeyboardInterrupt inside its callbacks into a ``SystemError``).
* Ctrl-C mid-run against a real broker (marked ``broker``): the run returns after the record
  or batch in hand, exit 0, no traceback, and what was handled is committed.
"""

from __future__ import annotations

import json
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sdk.testing.admin import create_topic

ROOT = Path(__file__).resolve().parents[2]
BOUND_MS = 4_000
# what the bound may be exceeded by: the last poll or probe (about 1 s) and a loaded machine
SLACK_S = 6.0
MAX_LINES = 8


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Run:
    """A worker process (tests/sdk/first_hour_worker.py) and what it printed."""

    def __init__(self, **args: Any) -> None:
        self.args = args
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.sdk.first_hour_worker", json.dumps(args)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # SIGINT as a terminal delivers it: a child of a non-interactive shell may
            # inherit SIG_IGN, and Python then installs no handler of its own
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        self.out = ""
        self.err = ""

    def wait_ready(self) -> None:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line.strip() == "ready", line

    def finish(self, timeout_s: float = 90.0) -> dict[str, Any]:
        out, err = self.proc.communicate(timeout=timeout_s)
        self.out += out
        self.err = err
        self.elapsed = time.monotonic() - self.started
        lines = [line for line in self.out.splitlines() if line.startswith("RESULT ")]
        assert lines, f"no RESULT; rc={self.proc.returncode}\n{self.out}\n{self.err[-3000:]}"
        result: dict[str, Any] = json.loads(lines[-1][len("RESULT ") :])
        return result

    @property
    def log_lines(self) -> list[str]:
        return self.err.splitlines()


# ---------------------------------------------------------------------- no broker at all
FRONTS = ["producer", "consumer", "async_consumer", "processor", "queue", "sink"]


@pytest.fixture(scope="module")
def unreachable(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[str, Run, dict[str, Any]]]:
    """Every front end against a closed port, at once (the waits overlap)."""
    runs: dict[str, tuple[str, Run]] = {}
    for front in FRONTS:
        address = f"127.0.0.1:{free_port()}"
        ledger = str(tmp_path_factory.mktemp(front) / "ledger.db")
        runs[front] = (
            address,
            Run(front=front, bootstrap=address, setup_timeout_ms=BOUND_MS, ledger=ledger),
        )
    return {front: (address, run, run.finish()) for front, (address, run) in runs.items()}


@pytest.mark.parametrize("front", FRONTS)
def test_an_unreachable_broker_is_named_within_the_bound(
    unreachable: dict[str, tuple[str, Run, dict[str, Any]]], front: str
) -> None:
    address, run, result = unreachable[front]
    assert result["outcome"] == "raised", result
    assert result["type"] == "BrokerUnreachableError", result
    assert address in result["message"], result["message"]
    assert "Connection refused" in result["message"], result["message"]  # what was tried
    # the Producer's bound is its topic lookup (Producer(metadata_timeout_s=10))
    bound_s = 10.0 if front == "producer" else BOUND_MS / 1000
    assert bound_s - 0.5 <= result["seconds"] <= bound_s + SLACK_S, result
    print(f"{front}: {result['seconds']}s, {len(run.log_lines)} log line(s)")
    # librdkafka's connection-refused lines (about 19 a second) collapsed to one per kind
    assert len(run.log_lines) <= MAX_LINES, "\n".join(run.log_lines)
    assert "Traceback" not in run.err


@pytest.mark.slow
def test_the_default_bound_is_librdkafkas_connection_setup_timeout() -> None:
    """Without the extra: socket.connection.setup.timeout.ms's default, 30 s."""
    address = f"127.0.0.1:{free_port()}"
    run = Run(front="consumer", bootstrap=address)
    result = run.finish()
    assert result["type"] == "BrokerUnreachableError", result
    assert 29.5 <= result["seconds"] <= 30 + SLACK_S, result
    assert "socket.connection.setup.timeout.ms=30000" in result["message"]
    assert len(run.log_lines) <= MAX_LINES, "\n".join(run.log_lines)


@pytest.mark.parametrize("front", ["consumer", "async_consumer", "processor", "queue", "sink"])
def test_ctrl_c_without_a_broker_returns_cleanly(tmp_path: Path, front: str) -> None:
    run = Run(
        front=front,
        bootstrap=f"127.0.0.1:{free_port()}",
        ledger=str(tmp_path / "ledger.db"),
    )
    run.wait_ready()
    time.sleep(3.0)  # inside run(): consume() or the wait for a broker
    run.proc.send_signal(signal.SIGINT)
    result = run.finish(timeout_s=30)
    assert run.proc.returncode == 0, run.err
    assert result["outcome"] == "returned", result
    assert result["seconds"] < 10, result
    assert "Traceback" not in run.err and "SystemError" not in run.out + run.err, run.err
    assert "Ctrl-C again to stop at once" in run.err


# ---------------------------------------------------------------------- a real broker
def _seed(bootstrap: str, topic: str, count: int) -> None:
    from sdk import Producer, ProducerProfile

    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bootstrap)
    with Producer(profile) as producer:
        for i in range(count):
            producer.send(topic, str(i).encode(), partition=0)


def _committed(bootstrap: str, topic: str, group: str) -> int:
    from confluent_kafka import Consumer as Client
    from confluent_kafka import TopicPartition

    client = Client({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        (tp,) = client.committed([TopicPartition(topic, 0)], timeout=10)
        return int(tp.offset)
    finally:
        client.close()


@pytest.fixture
def seeded_topic(
    kafka_cluster: Any, make_group: Callable[..., str]
) -> Iterator[tuple[str, str, str]]:
    bootstrap = kafka_cluster.bootstrap_servers
    import uuid

    topic = create_topic(bootstrap, f"ctrlc-{uuid.uuid4().hex[:10]}", 1)
    _seed(bootstrap, topic, 200)
    yield bootstrap, topic, make_group()


def _ctrl_c_mid_run(run: Run, ledger: str, timeout_s: float = 60.0) -> dict[str, Any]:
    """Send Ctrl-C once some records were handled; wait for the exit."""
    run.wait_ready()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with sqlite3.connect(ledger) as db:
                handled = db.execute("SELECT COUNT(*) FROM handled").fetchone()[0]
        except sqlite3.OperationalError:
            handled = 0
        if handled >= 5:
            break
        time.sleep(0.1)
    else:
        run.proc.kill()
        raise AssertionError(f"nothing handled in {timeout_s}s: {run.proc.communicate()}")
    run.proc.send_signal(signal.SIGINT)
    result = run.finish(timeout_s=60)
    assert run.proc.returncode == 0, run.err
    assert result["outcome"] == "returned", result
    assert "Traceback" not in run.err, run.err
    return result


def _handled(ledger: str) -> list[int]:
    with sqlite3.connect(ledger) as db:
        return [row[0] for row in db.execute("SELECT off FROM handled ORDER BY off")]


@pytest.mark.broker
def test_ctrl_c_stops_the_consumer_and_commits_what_was_handled(
    tmp_path: Path, seeded_topic: tuple[str, str, str]
) -> None:
    bootstrap, topic, group = seeded_topic
    ledger = str(tmp_path / "ledger.db")
    run = Run(
        front="consumer", bootstrap=bootstrap, topic=topic, group=group, ledger=ledger, slow_s=0.05
    )
    _ctrl_c_mid_run(run, ledger)
    handled = _handled(ledger)
    assert handled == list(range(len(handled))), "handled in order, once each"
    assert 5 <= len(handled) < 200, "stopped mid-topic"
    # at_least_once: every handled record's offset is committed; the run stops after the
    # record in hand, so nothing beyond what was handled is committed either
    assert _committed(bootstrap, topic, group) == len(handled)


@pytest.mark.broker
def test_ctrl_c_stops_the_processor_and_commits_its_transaction(
    tmp_path: Path, seeded_topic: tuple[str, str, str]
) -> None:
    bootstrap, topic, group = seeded_topic
    output = create_topic(bootstrap, topic + "-out", 1)
    run = Run(
        front="processor", bootstrap=bootstrap, topic=topic, group=group, output=output, slow_s=0.05
    )
    run.wait_ready()
    time.sleep(8.0)  # the processor joins, starts its transactions and handles some records
    run.proc.send_signal(signal.SIGINT)
    result = run.finish(timeout_s=60)
    assert run.proc.returncode == 0, run.err
    assert result["outcome"] == "returned", result
    assert "Traceback" not in run.err, run.err
    committed = _committed(bootstrap, topic, group)
    assert 0 < committed < 200, committed
    # exactly_once: the committed input offset and the committed outputs are one transaction
    assert _read_committed_count(bootstrap, output) == committed


def _read_committed_count(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer as Client
    from confluent_kafka import TopicPartition

    client = Client(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "count-" + topic,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        client.assign([TopicPartition(topic, 0, 0)])
        count, idle_since = 0, time.monotonic()
        while time.monotonic() - idle_since < 3.0:
            messages = client.consume(500, 0.5)
            if messages:
                idle_since = time.monotonic()
                count += sum(1 for m in messages if m.error() is None)
        return count
    finally:
        client.close()


@pytest.mark.broker
def test_ctrl_c_stops_the_sqlite_sink_with_positions_and_rows_together(
    tmp_path: Path, seeded_topic: tuple[str, str, str]
) -> None:
    bootstrap, topic, group = seeded_topic
    ledger = str(tmp_path / "ledger.db")
    _ledger_table(ledger)
    run = Run(
        front="sink", bootstrap=bootstrap, topic=topic, group=group, ledger=ledger, slow_s=0.05
    )
    _ctrl_c_mid_run(run, ledger)
    handled = _handled(ledger)
    assert handled == list(range(len(handled))), "each row once, in order"
    assert 5 <= len(handled) < 200, "stopped mid-topic"
    with sqlite3.connect(ledger) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        positions = next(t for t in tables if t != "handled")
        (position,) = db.execute(f"SELECT next_offset FROM {positions}").fetchone()
    # exactly_once into the database: the rows and the position commit together
    assert position == len(handled)


def _ledger_table(path: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE IF NOT EXISTS handled (part INTEGER, off INTEGER)")
