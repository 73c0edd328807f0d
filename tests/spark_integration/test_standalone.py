"""The batch job on a real standalone Spark cluster (a master and 2 workers, separate JVMs),
with one executor JVM SIGKILLed mid-job: Spark reruns its tasks elsewhere, and the output has
0 duplicates and 0 missing, read by a raw read_committed reader and by Spark's own Kafka
reader."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from sdk.testing.pytest_plugin import require_local
from sdk.testing.spark_cluster import StandaloneSpark
from tests.spark_integration._support import (
    ROOT,
    committed,
    kill_group,
    read_values,
    run_driver,
    seed,
    start_driver,
    verdict,
    wait_for,
)

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.slow]

N = 200_000
PARTS = 8


def _result(log: Path) -> dict[str, Any]:
    for line in log.read_text(errors="replace").splitlines():
        if line.startswith("RESULT "):
            parsed: dict[str, Any] = json.loads(line[len("RESULT ") :])
            return parsed
    raise AssertionError(f"no RESULT line; log:\n{log.read_text(errors='replace')[-4000:]}")


def test_batch_job_on_a_standalone_cluster_survives_an_executor_kill(
    kafka_cluster: Any, make_topic: Any, make_group: Any, tmp_path: Path, spark: Any
) -> None:
    bs = require_local(kafka_cluster).bootstrap_servers
    src, dst, group = make_topic(PARTS), make_topic(PARTS), make_group()
    seed(bs, src, N)
    log = tmp_path / "driver.log"
    with StandaloneSpark(workers=2, cores=1, python_path=[str(ROOT)]) as cluster:
        args = {
            "mode": "batch",
            "master": cluster.master_url,
            "bs": bs,
            "src": src,
            "dst": dst,
            "group": group,
            "job": "standalone-copy",
            "prefix": f"{group}-",
            "chunk": 2_000,
        }
        began = time.monotonic()
        proc = start_driver(args, log)
        try:

            def done() -> int:
                return sum(max(o, 0) for o in committed(bs, group, src, PARTS))

            wait_for(lambda: done() >= N // 8 or proc.poll() is not None, 300, "1/8 committed")
            assert proc.poll() is None, log.read_text(errors="replace")[-4000:]
            executors = cluster.executor_pids()
            killed = cluster.kill_executor()
            at = done()
            print(f"\nSIGKILL executor JVM {killed} (of {executors}) at {at}/{N} committed")
            assert at < N  # mid-job
            rc = proc.wait(600)
        finally:
            if proc.poll() is None:
                kill_group(proc)
        assert rc == 0, log.read_text(errors="replace")[-4000:] + cluster.logs()
        seconds = time.monotonic() - began
    out = _result(log)
    attempts = {r["partition"]: r["attempt"] for r in out["results"]}
    print(f"standalone: {seconds:.1f}s, attempts per partition {attempts}")
    assert sorted(attempts) == list(range(PARTS))
    assert max(attempts.values()) >= 1  # the killed executor's tasks ran again elsewhere
    ends = [r["end"] for r in sorted(out["results"], key=lambda r: r["partition"])]
    assert committed(bs, group, src, PARTS) == ends and sum(ends) == N

    v = verdict(read_values(bs, dst), N)
    print(f"raw read_committed reader: {v}")
    assert (v.count, v.duplicates, v.missing, v.foreign) == (N, 0, 0, 0)
    native = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bs)
        .option("subscribe", dst)
        .option("startingOffsets", "earliest")
        .option("kafka.isolation.level", "read_committed")
        .load()
    )
    total = native.count()
    distinct = native.select("value").distinct().count()
    print(f"Spark's Kafka reader (read_committed): {total} records, {distinct} distinct")
    assert (total, distinct) == (N, N)


def test_streaming_sink_on_a_standalone_cluster_survives_an_executor_kill_and_a_restart(
    kafka_cluster: Any, make_topic: Any, make_group: Any, tmp_path: Path
) -> None:
    """The streaming sink on the standalone cluster: an executor JVM SIGKILLed mid-query (Spark
    reruns its slice tasks, which fence their earlier attempts), then the driver SIGKILLed and
    the query restarted from its checkpoint: 0 duplicates, 0 missing."""
    bs = require_local(kafka_cluster).bootstrap_servers
    parts, n = 4, 60_000
    src, dst, progress = make_topic(parts), make_topic(parts), make_topic(1)
    group = make_group()
    seed(bs, src, n, transactional=True)  # markers and aborted records in the input
    with StandaloneSpark(workers=2, cores=1, python_path=[str(ROOT)]) as cluster:
        args: dict[str, Any] = {
            "mode": "stream",
            "master": cluster.master_url,
            "bs": bs,
            "src": src,
            "dst": dst,
            "group": group,
            "job": "sink",
            "prefix": f"{group}-",
            "progress_topic": progress,
            "per_batch": 4_000,
            "checkpoint": str(tmp_path / "checkpoint"),
        }

        def batches_done() -> int:
            return min(committed(bs, "sink.progress", progress, parts))

        proc = start_driver(args, tmp_path / "run1.log")
        try:
            wait_for(lambda: batches_done() >= 2 or proc.poll() is not None, 300, "batch 1")
            assert proc.poll() is None, (tmp_path / "run1.log").read_text()[-3000:]
            killed = cluster.kill_executor()
            at = batches_done()
            print(f"\nSIGKILL executor JVM {killed} after batch {at - 1}")
            wait_for(lambda: batches_done() >= at + 2 or proc.poll() is not None, 300, "2 more")
            assert proc.poll() is None, (tmp_path / "run1.log").read_text()[-3000:]
        finally:
            kill_group(proc)  # the driver: the query restarts from its checkpoint below
        markers = committed(bs, "sink.progress", progress, parts)
        print(f"driver SIGKILLed; markers (batch id + 1 per slice): {markers}")
        out = run_driver(args, tmp_path / "run2.log", timeout=600)
        print(f"run 2 wrote {len(out['history'])} batches")
    v = verdict(read_values(bs, dst), n)
    print(f"streaming sink on the standalone cluster: {v}")
    assert (v.count, v.duplicates, v.missing, v.foreign) == (n, 0, 0, 0)
