"""Soak mode: a steady rate through producer → processors, throughput and latency over time.

End-to-end latency of a record = the time a read_committed reader of the output receives it
minus the ``ts`` header the source stage wrote at send (same host clock).
"""

from __future__ import annotations

import statistics
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from sdk.profiles import parse_guarantee
from sdk.testing.admin import create_topic
from sdk.testing.cluster import LocalCluster
from tests.reliability._faults import FaultContext
from tests.reliability._pipeline import PARTITIONS
from tests.reliability._source import SourceStage


def _reader(bs: str, topic: str, stop: threading.Event, out: list[tuple[float, float]]) -> None:
    c = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": f"soak-{uuid.uuid4().hex[:6]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    try:
        while not stop.is_set():
            for m in c.consume(1000, 0.2):
                if m.error():
                    continue
                now = time.time_ns()
                sent = int(dict(m.headers() or [])["ts"])
                out.append((now / 1e9, (now - sent) / 1e6))
    finally:
        c.close()


def run_soak(
    cluster: LocalCluster,
    guarantee: str,
    seconds: float,
    rate: float,
    tmp: Path,
    window: float = 5.0,
    log: Callable[[str], None] = print,
) -> list[dict[str, Any]]:
    """Run the soak; return one row per ``window`` seconds (throughput, p50, p99 in ms)."""
    g = parse_guarantee(guarantee)
    bs = cluster.bootstrap_servers
    tag = f"soak-{uuid.uuid4().hex[:8]}"
    src = create_topic(bs, f"{tag}-in", PARTITIONS, replication_factor=3)
    dst = create_topic(bs, f"{tag}-out", PARTITIONS, replication_factor=3)
    args = {
        "bootstrap": bs,
        "group": f"{tag}-g",
        "input": src,
        "output": dst,
        "guarantee": g.value,
        "txn_prefix": f"{tag}-",
        "commit_interval_ms": 100,
        "batch_size": 500,
    }
    ctx = FaultContext(cluster, src, dst, tmp, args, False, 0.0, log)
    samples: list[tuple[float, float]] = []
    stop = threading.Event()
    reader = threading.Thread(target=_reader, args=(bs, dst, stop, samples), daemon=True)
    records = int(seconds * rate)
    source = SourceStage(bs, src, g, records, rate=rate, chunk=max(100, int(rate / 10)), log=log)
    try:
        ctx.start("a")
        ctx.start("b")
        reader.start()
        time.sleep(5)  # let the group form: the first window is not a cold start
        started = time.time()
        source.allow(records)
        source.start()
        source.join(seconds + 120)
        time.sleep(5)
    finally:
        stop.set()
        reader.join(10)
        for w in ctx.workers.values():
            w.shutdown()
    rows = []
    for k in range(int((time.time() - started) // window)):
        lo, hi = started + k * window, started + (k + 1) * window
        lat = sorted(ms for t, ms in samples if lo <= t < hi)
        sent = sum(1 for t, ms in samples if lo <= t - ms / 1000 < hi)
        if not lat:
            continue
        rows.append(
            {
                "t": round(k * window),
                "sent_per_s": round(sent / window),
                "records_per_s": round(len(lat) / window),
                "p50_ms": round(statistics.median(lat), 1),
                "p99_ms": round(lat[min(len(lat) - 1, int(0.99 * len(lat)))], 1),
            }
        )
    log(f"[soak {g.value}] {len(samples):,}/{records:,} records read; {rows}")
    return rows
