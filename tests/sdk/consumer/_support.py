"""Seeding, committed-offset reads, DLQ reads, SQLite ledgers and worker processes."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from sdk.profiles import ConsumerProfile
from tests.sdk.processor._support import wait_for

__all__ = ["Ledger", "Worker", "committed", "profile", "read_topic", "seed", "wait_for"]

ROOT = Path(__file__).resolve().parents[3]


def profile(bootstrap: str, guarantee: str, group: str, **kw: Any) -> ConsumerProfile:
    kw.setdefault("session_timeout_ms", 6_000)
    return ConsumerProfile(guarantee=guarantee, bootstrap_servers=bootstrap, group_id=group, **kw)


def seed(
    bootstrap: str,
    topic: str,
    count: int,
    *,
    values: list[bytes] | None = None,
    producer_config: dict[str, Any] | None = None,
) -> None:
    """Write records ``0..count-1`` (value ``str(i)``, key ``k<i % 10>``), or ``values``;
    ``producer_config`` adds librdkafka producer keys (e.g. a small ``batch.size``)."""
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            **(producer_config or {}),
        }
    )
    payloads = values if values is not None else [str(i).encode() for i in range(count)]
    for i, value in enumerate(payloads):
        while True:
            try:
                p.produce(topic, key=f"k{i % 10}", value=value)
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(60) == 0


def committed(bootstrap: str, group: str, topic: str, partitions: int = 1) -> list[int]:
    """The group's committed offsets per partition (-1001 = none), read by an outside client."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        for _ in range(20):
            try:
                tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], 10)
            except KafkaException:
                time.sleep(0.3)
                continue
            return [tp.offset for tp in tps]
        raise AssertionError(f"could not read the committed offsets of {group}")
    finally:
        c.close()


def read_topic(bootstrap: str, topic: str, expect: int, timeout: float = 30.0) -> list[Any]:
    """Read ``expect`` records of ``topic`` (all partitions) from the start."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    c.subscribe([topic])
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expect and time.monotonic() < deadline:
            out += [m for m in c.consume(100, 0.3) if m.error() is None]
    finally:
        c.close()
    return out


class Ledger:
    """SQLite (WAL) ledger: one row per handling of a numbered record."""

    def __init__(self, path: Path | str) -> None:
        self.db = sqlite3.connect(str(path), timeout=30, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")  # a process kill loses no commit
        self.db.execute("CREATE TABLE IF NOT EXISTS handled (n INTEGER NOT NULL, pid INTEGER)")

    def record(self, n: int) -> None:
        """Append one handling of record ``n`` and commit it before returning."""
        self.db.execute("BEGIN")
        self.db.execute("INSERT INTO handled VALUES (?, ?)", (n, os.getpid()))
        self.db.execute("COMMIT")

    def rows(self) -> int:
        return int(self.db.execute("SELECT COUNT(*) FROM handled").fetchone()[0])

    def counts(self) -> dict[int, int]:
        q = "SELECT n, COUNT(*) FROM handled GROUP BY n"
        return {int(n): int(c) for n, c in self.db.execute(q)}

    def close(self) -> None:
        self.db.close()


class Worker:
    """One ``tests.sdk.consumer.crash_worker`` subprocess."""

    def __init__(self, **args: Any) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.sdk.consumer.crash_worker", json.dumps(args)],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def wait(self, timeout: float) -> int:
        return self.proc.wait(timeout)

    def terminate(self) -> None:
        if self.proc.poll() is None:
            self.kill()
