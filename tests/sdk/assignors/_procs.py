"""Spawning and reading the worker processes of ``_worker.py``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

ROOT = Path(__file__).resolve().parents[3]


class Worker:
    def __init__(self, mode: str, out: Path, **args: Any) -> None:
        self.out = out
        payload = json.dumps({"out": str(out), **args})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.sdk.assignors._worker", mode, payload],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )

    def state(self) -> dict[str, Any] | None:
        try:
            data: dict[str, Any] = json.loads(self.out.with_suffix(".json").read_text())
        except (OSError, ValueError):
            return None
        return data

    def log(self) -> list[tuple[int, int]]:
        path = self.out.with_suffix(".log")
        if not path.exists():
            return []
        rows = []
        for line in path.read_text().splitlines():
            part, off = line.split()
            rows.append((int(part), int(off)))
        return rows

    def stop(self) -> None:
        self.out.with_suffix(".stop").touch()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def alive(self) -> bool:
        return self.proc.poll() is None


@pytest.fixture
def workers() -> Iterator[list[Worker]]:
    started: list[Worker] = []
    yield started
    for w in started:
        w.stop()
    for w in started:
        try:
            w.proc.wait(20)
        except subprocess.TimeoutExpired:
            w.kill()


def wait_for(
    check: Callable[[], Any],
    timeout: float,
    what: str,
    every: float = 0.5,
    diagnose: Callable[[], Any] | None = None,
) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every)
    detail = f": {diagnose()}" if diagnose is not None else ""
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}{detail}")


def produce(bootstrap: str, topic: str, partitions: int, per_partition: int, tag: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, value=f"{tag}-{p}-{i}".encode(), partition=p)
    assert producer.flush(30) == 0
