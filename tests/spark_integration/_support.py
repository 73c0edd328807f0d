"""Seeding, verification, driver subprocesses and waits for the Spark tests."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

ROOT = Path(__file__).resolve().parents[2]


def seed(bootstrap: str, topic: str, count: int, *, transactional: bool = False) -> None:
    """Write values 0..count-1 (key = value). Transactional: 10 transactions, one aborted extra."""
    config: dict[str, Any] = {"bootstrap.servers": bootstrap, "linger.ms": 20}
    if transactional:
        config["transactional.id"] = f"seed-{topic}"
    p = Producer(config)

    def put(i: int, value: str | None = None) -> None:
        while True:
            try:
                p.produce(topic, key=str(i), value=value if value is not None else str(i))
                return
            except BufferError:
                p.poll(0.1)

    if not transactional:
        for i in range(count):
            put(i)
        assert p.flush(60) == 0
        return
    p.init_transactions(30)
    step = max(1, count // 10)
    for lo in range(0, count, step):
        p.begin_transaction()
        for i in range(lo, min(count, lo + step)):
            put(i)
        p.commit_transaction(30)
        p.begin_transaction()  # an aborted transaction between every two committed ones
        for i in range(lo, min(count, lo + step), 7):
            put(i, f"aborted-{i}")
        p.flush(30)
        p.abort_transaction(30)


@dataclass
class Verdict:
    count: int
    distinct: int
    duplicates: int
    missing: int
    foreign: int


def read_values(bootstrap: str, topic: str, timeout: float = 120.0) -> list[str]:
    """Read every value of ``topic`` with read_committed to the end (independent consumer)."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{time.time_ns()}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        meta = c.list_topics(topic, timeout=30).topics[topic]
        parts = sorted(meta.partitions)
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        eof: set[int] = set()
        values: list[str] = []
        deadline = time.monotonic() + timeout
        while len(eof) < len(parts) and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if m.error():
                    if m.error().code() == -191:  # _PARTITION_EOF
                        eof.add(m.partition())
                    continue
                values.append(m.value().decode())
        assert len(eof) == len(parts), "output not read to its end in time"
        return values
    finally:
        c.close()


def verdict(values: list[str], expected: int) -> Verdict:
    counts = Counter(values)
    wanted = {str(i) for i in range(expected)}
    return Verdict(
        count=len(values),
        distinct=len(counts),
        duplicates=sum(n - 1 for n in counts.values()),
        missing=len(wanted - counts.keys()),
        foreign=len(counts.keys() - wanted),
    )


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    """The group's committed offsets (-1 where none), read with read_committed/require_stable."""
    c = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_committed"}
    )
    try:
        for _ in range(30):
            try:
                tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], 10)
                return [tp.offset if tp.offset >= 0 else -1 for tp in tps]
            except KafkaException:
                time.sleep(0.3)
        raise AssertionError(f"could not read committed offsets of {group}")
    finally:
        c.close()


def wait_for(cond: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for: {what}")


def driver_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])]
    )
    env["PYSPARK_PYTHON"] = sys.executable
    return env


def start_driver(args: dict[str, Any], log: Path) -> subprocess.Popen[bytes]:
    """Start ``python -m tests.spark_integration.driver`` in its own process group."""
    out = open(log, "wb")  # noqa: SIM115 (closed with the process)
    return subprocess.Popen(
        [sys.executable, "-u", "-m", "tests.spark_integration.driver", json.dumps(args)],
        cwd=ROOT,
        env=driver_env(),
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the driver, its JVM and its Python workers (one process group)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)


def run_driver(args: dict[str, Any], log: Path, timeout: float = 300) -> dict[str, Any]:
    """Run the driver to completion; return the JSON it printed on its RESULT line."""
    proc = start_driver(args, log)
    try:
        rc = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        kill_group(proc)
        raise AssertionError(f"driver timed out; log:\n{log.read_text()[-3000:]}") from None
    finally:
        if proc.poll() is None:
            kill_group(proc)
    text = log.read_text(errors="replace")
    assert rc == 0, f"driver exited {rc}; log:\n{text[-4000:]}"
    for line in text.splitlines():
        if line.startswith("RESULT "):
            parsed: dict[str, Any] = json.loads(line[len("RESULT ") :])
            return parsed
    raise AssertionError(f"no RESULT line; log:\n{text[-3000:]}")
