"""SIGKILLs during a concurrent at_least_once run: nothing lost, repeats bounded, key order kept.

A worker process (``tests.sdk.consumer.concurrent_worker``) runs ``concurrency=16`` over 4
partitions and 500 keys and is SIGKILLed twice at unchosen moments, then runs to the end of
the topic. What it handled is counted from its SQLite ledger, not by the SDK.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from tests.sdk.consumer._support import committed, wait_for
from tests.sdk.processor._support import seed as seed_keys

pytestmark = pytest.mark.broker

ROOT = Path(__file__).resolve().parents[3]
N, KEYS, PARTS = 6_000, 500, 4
MAX_BUFFERED, BATCH = 300, 100  # small: the records at risk at a kill stay few


def _worker(args: dict[str, Any]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.sdk.consumer.concurrent_worker", json.dumps(args)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
    )


def test_sigkills_lose_nothing_and_keep_each_keys_order(
    kafka_cluster: Any, make_topic: Any, make_group: Any, tmp_path: Path
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(PARTS), make_group()
    seed_keys(bs, topic, N, KEYS)
    ledger = tmp_path / "ledger.db"
    db = sqlite3.connect(str(ledger), timeout=30, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(
        "CREATE TABLE handled"
        " (n INTEGER NOT NULL, k TEXT NOT NULL, p INTEGER, o INTEGER, pid INTEGER)"
    )

    def rows() -> int:
        return int(db.execute("SELECT COUNT(*) FROM handled").fetchone()[0])

    args = {
        "bootstrap": bs,
        "topic": topic,
        "group": group,
        "ledger": str(ledger),
        "concurrency": 16,
        "max_buffered": MAX_BUFFERED,
        "batch_size": BATCH,
    }
    # what each killed process handled at or above the offsets committed when it died: the
    # only records a restart may repeat. A record can be exposed by both kills (handled above
    # the committed offset by the first and the second process), so each exposure allows one
    # repeat: a multiset, not a set.
    exposed: Counter[int] = Counter()
    for kills, at in enumerate((1_500, 3_500), start=1):
        proc = _worker(args)
        try:
            wait_for(lambda at=at: rows() >= at, 120, f"{at} ledger rows")  # type: ignore[misc]
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait(10)
        marks = committed(bs, group, topic, PARTS)
        mine = db.execute("SELECT n, p, o FROM handled WHERE pid = ?", (proc.pid,)).fetchall()
        above = {int(n) for n, p, o in mine if o >= marks[p]}
        exposed.update(above)
        spans = {
            p: (min(o for _, q, o in mine if q == p), max(o for _, q, o in mine if q == p))
            for p in sorted({q for _, q, _ in mine})
        }
        print(
            f"SIGKILL #{kills} at {rows()} rows, committed {marks}: {len(above)} above them;"
            f" offsets it handled per partition (min, max): {spans}"
        )
    proc = _worker(args)
    out, _ = proc.communicate(timeout=240)
    assert proc.returncode == 0
    stats = json.loads(out.decode().strip().splitlines()[-1])

    counts = Counter(int(n) for (n,) in db.execute("SELECT n FROM handled"))
    lost = sorted(set(range(N)) - set(counts))
    repeated = sum(c - 1 for c in counts.values())
    print(f"handled {sum(counts.values())} times, repeated {repeated}, last run {stats}")
    assert lost == []
    # a repeat is a record handled at or above the committed offset when its process died
    # (running, finished above the prefix, or stored and not yet committed by the 200 ms
    # timer); nothing below a committed offset is handled again
    repeats = {n for n, c in counts.items() if c > 1}
    assert repeats <= set(exposed)
    assert all(counts[n] - 1 <= exposed[n] for n in repeats)
    # within each process, each key's records were handled in offset (= sequence) order
    seqs: dict[tuple[int, str], list[int]] = defaultdict(list)
    for n, k, pid in db.execute("SELECT n, k, pid FROM handled ORDER BY rowid"):
        seqs[(pid, k)].append(n)
    disorder = [key for key, ns in seqs.items() if ns != sorted(ns)]
    assert disorder == []
    assert sum(committed(bs, group, topic, PARTS)) == N
    db.close()
