"""Soak mode: a steady rate through producer → processors, throughput and latency over time.

End-to-end latency of a record = the time a read_committed reader of the output receives it
minus the ``ts`` header the source stage wrote at send (same host clock).

The soak measures the *processors* under a guarantee, so the source is always an idempotent
at_least_once producer: an exactly_once source would commit a transaction per chunk and could
not hold the offered rate on a cold cluster (it ramped from 240 to 2,000 records/s over 80 s in
an early run), which measured the source instead of the pipeline. The first ``warmup`` seconds
run at the same rate but are not reported (JIT, first transactions, group join).
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

from sdk.profiles import Guarantee
from sdk.profiles._common import parse_guarantee
from sdk.testing.admin import create_topic
from sdk.testing.cluster import LocalCluster
from tests.reliability._faults import FaultContext
from tests.reliability._pipeline import PARTITIONS
from tests.reliability._source import SourceStage


def _reader(
    bs: str, topic: str, stop: threading.Event, out: list[tuple[float, float, int]]
) -> None:
    """Append (receive time s, end-to-end latency ms, sequence number) per record read."""
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
                out.append((now / 1e9, (now - sent) / 1e6, int(m.value())))
    finally:
        c.close()


def _acked_at(progress: list[tuple[float, int]], when: float) -> int:
    """The source's acknowledged count at ``when`` (last sample at or before it)."""
    count = 0
    for t, n in progress:
        if t > when:
            break
        count = n
    return count


def run_soak(
    cluster: LocalCluster,
    guarantee: str,
    seconds: float,
    rate: float,
    tmp: Path,
    window: float = 5.0,
    warmup: float = 15.0,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Run the soak at ``rate`` records/s for ``warmup`` + ``seconds`` seconds.

    Returns:
        ``rows``: one per ``window`` seconds after the warm-up (records/s acknowledged to the
        source and read from the output,
        p50/p99 end-to-end latency in ms); ``sent``/``read``/``distinct_read``: totals over the
        whole run including the warm-up; ``drain_seconds``: how long after the source finished
        the last record arrived.
    """
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
    samples: list[tuple[float, float, int]] = []
    stop = threading.Event()
    reader = threading.Thread(target=_reader, args=(bs, dst, stop, samples), daemon=True)
    records = int((warmup + seconds) * rate)
    source = SourceStage(
        bs,
        src,
        Guarantee.AT_LEAST_ONCE,
        records,
        rate=rate,
        chunk=max(100, int(rate / 10)),
        log=log,
    )
    try:
        ctx.start("a")
        ctx.start("b")
        reader.start()
        time.sleep(5)  # let the group form
        started = time.time() + warmup
        source.allow(records)
        source.start()
        acked: list[tuple[float, int]] = [(time.time(), 0)]  # the source's own progress
        give_up = time.time() + warmup + seconds + 120
        while source.is_alive() and time.time() < give_up:
            source.join(0.5)
            acked.append((time.time(), source.acked))
        finished = time.time()
        deadline = finished + 60
        while len(samples) < records and time.time() < deadline:
            time.sleep(0.5)
        time.sleep(2)  # late duplicates, if any, are counted
    finally:
        stop.set()
        reader.join(10)
        for w in ctx.workers.values():
            w.shutdown()
    if source.error is not None:
        raise RuntimeError(f"soak source failed: {source.error!r}") from source.error
    rows = []
    for k in range(int(seconds // window)):
        lo, hi = started + k * window, started + (k + 1) * window
        lat = sorted(ms for t, ms, _ in samples if lo <= t < hi)
        if not lat:
            continue
        rows.append(
            {
                "t": round(k * window),
                "sent_per_s": round((_acked_at(acked, hi) - _acked_at(acked, lo)) / window),
                "records_per_s": round(len(lat) / window),
                "p50_ms": round(statistics.median(lat), 1),
                "p99_ms": round(lat[min(len(lat) - 1, int(0.99 * len(lat)))], 1),
            }
        )
    last = max((t for t, _, _ in samples), default=finished)
    result = {
        "sent": source.acked,
        "read": len(samples),
        "distinct_read": len({seq for _, _, seq in samples}),
        "drain_seconds": round(max(0.0, last - finished), 1),
        "rows": rows,
    }
    log(f"[soak {g.value}] {len(samples):,}/{records:,} records read; {rows}")
    return result
