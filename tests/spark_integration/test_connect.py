"""The batch job through Spark Connect (``sc://``): no RDD API, no SparkContext on the client.

A Spark Connect server (its own JVM, from pyspark's distribution) runs the job's tasks; the
driver process is a Connect client. Counted by a raw read_committed reader, not the SDK.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sdk.testing.pytest_plugin import require_local
from sdk.testing.spark_cluster import ConnectServer
from tests.spark_integration._support import ROOT, committed, read_values, run_driver, seed, verdict

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.slow]

N = 50_000
PARTS = 4


def test_batch_job_runs_through_spark_connect(
    kafka_cluster: Any, make_topic: Any, make_group: Any, tmp_path: Path
) -> None:
    bs = require_local(kafka_cluster).bootstrap_servers
    src, dst, group = make_topic(PARTS), make_topic(PARTS), make_group()
    seed(bs, src, N)
    with ConnectServer("local[2,4]", python_path=[str(ROOT)]) as server:
        args = {
            "mode": "batch",
            "master": server.url,
            "bs": bs,
            "src": src,
            "dst": dst,
            "group": group,
            "job": "connect-copy",
            "prefix": f"{group}-",
            "chunk": 5_000,
        }
        try:
            out = run_driver(args, tmp_path / "driver.log", timeout=300)
        except AssertionError:
            print(server.log())
            raise
    results = sorted(out["results"], key=lambda r: r["partition"])
    print(f"connect: {out['job_seconds']:.1f}s, {[r['records_in'] for r in results]}")
    assert [r["partition"] for r in results] == list(range(PARTS))
    assert committed(bs, group, src, PARTS) == [r["end"] for r in results]
    v = verdict(read_values(bs, dst), N)
    print(f"raw read_committed reader: {v}")
    assert (v.count, v.duplicates, v.missing, v.foreign) == (N, 0, 0, 0)


def test_streaming_sink_runs_through_spark_connect(
    kafka_cluster: Any, make_topic: Any, make_group: Any, tmp_path: Path
) -> None:
    """Structured Streaming with the exactly-once foreachBatch sink, the query started from a
    Spark Connect client: 20,000 records in 5,000-record micro-batches, 0 duplicated, 0 lost."""
    from sdk.testing.spark_jars import resolve_spark_kafka_jars

    bs = require_local(kafka_cluster).bootstrap_servers
    src, dst, progress = make_topic(PARTS), make_topic(PARTS), make_topic(1)
    group = make_group()
    n = 20_000
    seed(bs, src, n)
    jars = resolve_spark_kafka_jars().jars
    with ConnectServer("local[2,4]", jars=jars, python_path=[str(ROOT)]) as server:
        args = {
            "mode": "stream",
            "master": server.url,
            "bs": bs,
            "src": src,
            "dst": dst,
            "group": group,
            "job": "connect-sink",
            "prefix": f"{group}-",
            "progress_topic": progress,
            "per_batch": 5_000,
            "checkpoint": str(tmp_path / "checkpoint"),
        }
        try:
            run_driver(args, tmp_path / "stream.log", timeout=300)
        except AssertionError:
            print(server.log())
            raise
    v = verdict(read_values(bs, dst), n)
    print(f"connect streaming sink, raw read_committed reader: {v}")
    assert (v.count, v.duplicates, v.missing, v.foreign) == (n, 0, 0, 0)
