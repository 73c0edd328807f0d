"""Seeding, progress, verification and worker processes for the processor tests."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

ROOT = Path(__file__).resolve().parents[3]


def seed(bootstrap: str, topic: str, count: int, keys: int = 1000) -> None:
    """Write records 0..count-1: key ``k<i % keys>``, value ``str(i)`` (per-key increasing)."""
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 20})
    for i in range(count):
        while True:
            try:
                p.produce(topic, key=f"k{i % keys}", value=str(i))
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(60) == 0


def committed_total(bootstrap: str, group: str, topic: str, partitions: int) -> int:
    """Sum of the group's committed offsets on ``topic`` (read without joining the group)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        for _ in range(20):
            try:
                tps = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
            except KafkaException:  # coordinator moving / loading: ask again
                time.sleep(0.3)
                continue
            return sum(max(tp.offset, 0) for tp in tps)
        raise AssertionError(f"could not read the committed offsets of {group}")
    finally:
        c.close()


@dataclass
class Verdict:
    count: int = 0
    distinct: int = 0
    duplicates: int = 0
    missing: int = 0
    order_violations: int = 0
    values: dict[str, list[int]] = field(default_factory=dict)


def verify(
    bootstrap: str, topic: str, partitions: int, expected: int, timeout: float = 120.0
) -> Verdict:
    """Read ``topic`` read_committed to its end; count duplicates, missing and per-key order."""
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
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    eof: set[int] = set()
    per_key: dict[str, list[int]] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(eof) < partitions and time.monotonic() < deadline:
            for m in c.consume(1000, 0.5):
                if m.error():
                    if m.error().code() == -191:  # _PARTITION_EOF
                        eof.add(m.partition())
                    continue
                eof.discard(m.partition())
                per_key.setdefault(m.key().decode(), []).append(int(m.value()))
    finally:
        c.close()
    v = Verdict(values=per_key)
    seen: set[int] = set()
    for vals in per_key.values():
        v.count += len(vals)
        seen.update(vals)
        v.order_violations += sum(1 for a, b in itertools.pairwise(vals) if b <= a)
    v.distinct = len(seen)
    v.duplicates = v.count - v.distinct
    v.missing = len(set(range(expected)) - seen)
    return v


class Worker:
    """One ``tests.sdk.processor.worker`` subprocess."""

    def __init__(self, tmp: Path, name: str, **args: Any) -> None:
        self.name = name
        self.stats_path = tmp / f"{name}-{time.time_ns()}.json"
        payload = json.dumps({"stats": str(self.stats_path), "instance": name, **args})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.sdk.processor.worker", payload],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )

    def stats(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads(self.stats_path.read_text())
        except (OSError, ValueError):
            return {}
        return data

    def signal(self, sig: signal.Signals) -> None:
        self.proc.send_signal(sig)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def terminate(self, timeout: float = 30.0) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.kill()


def wait_for(check: Callable[[], Any], timeout: float, what: str, every: float = 0.3) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


N = 100_000
PARTS = 4


def crash_run(
    bs: str, tmp: Path, guarantee: str, src: str, dst: str, group: str, n: int = N, **extra: Any
) -> dict[str, Any]:
    """Copy ``n`` records with 2 workers under 3 SIGKILLs, a member joining and one leaving."""
    seed(bs, src, n)
    tag = f"{guarantee} {extra['front']}" if "front" in extra else guarantee
    base = {
        "bootstrap": bs,
        "group": group,
        "input": src,
        "output": dst,
        "guarantee": guarantee,
        "txn_prefix": f"{group}-",
        "delay_per_100": 0.02,
        **extra,
    }
    workers: dict[str, Worker] = {}
    started: list[Worker] = []

    def start(name: str) -> None:
        workers[name] = Worker(tmp, name, **base)
        started.append(workers[name])

    def progress() -> int:
        return committed_total(bs, group, src, PARTS)

    kills = 0
    try:
        start("a")
        start("b")
        for step, (victim, frac) in enumerate((("a", 0.2), ("b", 0.4), ("a", 0.6))):
            wait_for(lambda f=frac: progress() >= f * n, 240, f"{frac:.0%} progress")
            workers[victim].kill()
            kills += 1
            print(f"[{tag}] SIGKILL {victim} #{step + 1} at {progress()}/{n}")
            start(victim)
        wait_for(lambda: progress() >= 0.7 * n, 240, "70% progress")
        start("c")  # a member joins: rebalance
        print(f"[{tag}] member c added at {progress()}/{n}")
        wait_for(lambda: progress() >= 0.85 * n, 240, "85% progress")
        workers["c"].terminate()  # a member leaves: rebalance
        print(f"[{tag}] member c removed at {progress()}/{n}")
        wait_for(lambda: progress() >= n, 300, "all input committed")
    finally:
        for w in started:
            w.terminate()
    v = verify(bs, dst, PARTS, n)
    print(
        f"[{tag}] kills={kills} count={v.count} distinct={v.distinct} "
        f"duplicates={v.duplicates} missing={v.missing} order_violations={v.order_violations}"
    )
    return {"kills": kills, "verdict": v}


def zombie_run(
    bs: str,
    tmp_path: Path,
    src: str,
    dst: str,
    group: str,
    frozen_s: float = 10,
    n: int = 20_000,
    **extra: Any,
) -> dict[str, Any]:
    """Worker a is frozen (SIGSTOP) mid-transaction for ``frozen_s``, then thawed.

    The default 10 s is past the session timeout (6 s): the group moves a's partitions to b.
    """
    seed(bs, src, n)
    base = {
        "bootstrap": bs,
        "group": group,
        "input": src,
        "output": dst,
        "guarantee": "exactly_once",
        "txn_prefix": f"{group}-",
        "delay_per_100": 0.05,
        "commit_interval_ms": 3000,
        "session_timeout_ms": 6000,
        **extra,
    }
    freeze = tmp_path / "a.freeze"
    a, b = Worker(tmp_path, "a", **base, freeze=str(freeze)), Worker(tmp_path, "b", **base)
    try:
        wait_for(lambda: committed_total(bs, group, src, PARTS) >= 0.1 * n, 120, "10%")
        held = freeze.with_suffix(".held")
        freeze.touch()  # a's handler stops mid-transaction; then the whole process is frozen
        wait_for(held.exists, 60, "a to hold an open transaction")
        a.signal(signal.SIGSTOP)
        freeze.unlink()
        print(f"[zombie] a held {held.read_text()} uncommitted records at SIGSTOP")
        print(f"[zombie] SIGSTOP a at {committed_total(bs, group, src, PARTS)}/{n}")
        time.sleep(frozen_s)
        a.signal(signal.SIGCONT)
        wait_for(lambda: committed_total(bs, group, src, PARTS) >= n, 240, "all committed")
        time.sleep(1.5)
        sa = a.stats()
        print(f"[zombie] a={ {k: v for k, v in sa.items() if k != 'events'} }")
        print(f"[zombie] b={ {k: v for k, v in b.stats().items() if k != 'events'} }")
        print(
            f"[zombie] a after SIGCONT: aborts={sa.get('aborts')} lost={sa.get('lost')} "
            f"events={sa.get('events', [])[-6:]}"
        )
    finally:
        a.terminate()
        b.terminate()
    v = verify(bs, dst, PARTS, n)
    print(f"[zombie] count={v.count} duplicates={v.duplicates} missing={v.missing}")
    return {"a": sa, "verdict": v, "n": n}
