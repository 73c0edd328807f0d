"""Benchmark: our exactly-once Kafka → PySpark → Kafka job vs Spark's native Kafka sink.

All rows run in one SparkSession (``local[2,4]``) against the same broker and the same input
topic (``-n`` records over ``--partitions`` partitions, 100-byte values), each into a fresh
output topic:

* ``exactly-once job (ours)``: :class:`~spark_integration.ExactlyOnceBatchJob` with a Python
  copy transform, one transaction per ``--chunk`` records, group offsets in the transaction;
* ``native sink, Python copy``: Spark's Kafka source → ``rdd.mapPartitions`` with the same
  Python copy → ``write.format("kafka")`` (at-least-once), the like-for-like peer;
* ``native sink, JVM copy``: source → ``selectExpr("key", "value")`` → Kafka sink, no Python
  at all (the native best case).

Times are wall clock from the job's start to its end (planning included), medians over
``--runs`` runs after one discarded warm-up pass; the row order rotates between runs. Output
counts are checked (ours must be exactly ``-n``). ``--standalone 1,2`` runs the same rows on a
real standalone Spark cluster (:class:`sdk.testing.spark_cluster.StandaloneSpark`, one core per
worker) once per worker count, and prints the scaling from the first count to the last.
Usage::

    .venv/bin/python benchmarks/spark.py                    # starts a 1-node local cluster
    .venv/bin/python benchmarks/spark.py --bootstrap 127.0.0.1:9092 -n 200000
    .venv/bin/python benchmarks/spark.py --standalone 1,2 -n 200000 --partitions 8
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer, Producer, TopicPartition

from sdk.processor import OutputRecord
from sdk.profiles import ConsumerProfile
from sdk.testing.admin import create_topic
from sdk.testing.spark_jars import resolve_spark_kafka_jars
from spark_integration._batch import ExactlyOnceBatchJob
from spark_integration._config import BatchJobConfig
from spark_integration._native import read_kafka
from spark_integration._session import local_session, session

ROOT = Path(__file__).resolve().parents[1]


class CopyTo:
    """The Python copy transform of our job (picklable)."""

    def __init__(self, topic: str) -> None:
        self.topic = topic

    def __call__(self, records: Iterator[Any]) -> list[OutputRecord]:
        """Copy key and value of each record."""
        return [OutputRecord(self.topic, r.value, key=r.key) for r in records]


def _copy_rows(rows: Iterator[Any]) -> Iterator[tuple[bytes, bytes]]:
    for r in rows:
        yield (r.key, r.value)


def seed(bs: str, topic: str, n: int) -> None:
    """Write ``n`` records with 100-byte values."""
    p = Producer({"bootstrap.servers": bs, "linger.ms": 20, "enable.idempotence": True})
    value = b"x" * 100
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, key=str(i).encode())
                break
            except BufferError:
                p.poll(0.1)
    assert p.flush(120) == 0


def count(bs: str, topic: str, partitions: int) -> int:
    """Offsets in ``topic`` (records plus transaction markers)."""
    c = Consumer(
        {"bootstrap.servers": bs, "group.id": "bench-count", "isolation.level": "read_committed"}
    )
    try:
        total = 0
        for p in range(partitions):
            lo, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            total += hi - lo
        return total
    finally:
        c.close()


def ours(spark: Any, bs: str, src: str, dst: str, chunk: int) -> None:
    """Our exactly-once job with a fresh group."""
    config = BatchJobConfig.exactly_once(
        job_name="bench",
        input_topics=[src],
        bootstrap_servers=bs,
        group_id=f"bench-{uuid.uuid4().hex[:8]}",
        transactional_id_prefix="bench-",
        max_records_per_transaction=chunk,
        progress_interval_s=0,
    )
    ExactlyOnceBatchJob(spark, config, progress=lambda line: None).run(CopyTo(dst))


def native_python(spark: Any, bs: str, src: str, dst: str, chunk: int) -> None:
    """Spark's source and sink with the same Python copy in between."""
    from pyspark.sql.types import BinaryType, StructField, StructType

    consumer = ConsumerProfile(
        guarantee="exactly_once", bootstrap_servers=bs, group_id=f"b-{uuid.uuid4().hex[:8]}"
    )
    schema = StructType([StructField("key", BinaryType()), StructField("value", BinaryType())])
    rows = read_kafka(spark, consumer, [src]).rdd.mapPartitions(_copy_rows)
    (
        spark.createDataFrame(rows, schema)
        .write.format("kafka")
        .option("kafka.bootstrap.servers", bs)
        .option("topic", dst)
        .save()
    )


def native_jvm(spark: Any, bs: str, src: str, dst: str, chunk: int) -> None:
    """Spark's source and sink, no Python."""
    consumer = ConsumerProfile(
        guarantee="exactly_once", bootstrap_servers=bs, group_id=f"b-{uuid.uuid4().hex[:8]}"
    )
    (
        read_kafka(spark, consumer, [src])
        .selectExpr("key", "value")
        .write.format("kafka")
        .option("kafka.bootstrap.servers", bs)
        .option("topic", dst)
        .save()
    )


ROWS: list[tuple[str, Callable[..., None], bool]] = [
    ("exactly-once job (ours)", ours, True),
    ("native sink, Python copy", native_python, False),
    ("native sink, JVM copy", native_jvm, False),
]


def run(
    bs: str, n: int, partitions: int, runs: int, chunk: int, master: str | None = None
) -> dict[str, float]:
    """Run every row ``runs`` times after a warm-up; return the median records/s per row."""
    src = create_topic(bs, f"bench-in-{uuid.uuid4().hex[:8]}", partitions)
    seed(bs, src, n)
    jars = resolve_spark_kafka_jars().jars
    if master is None:
        spark = local_session("spark-benchmark", jars=jars)
    else:
        spark = session(
            master,
            "spark-benchmark",
            jars=jars,
            python_path=[str(ROOT)],
            conf={"spark.driver.host": "127.0.0.1", "spark.executor.memory": "512m"},
        )
    rates: dict[str, list[float]] = {name: [] for name, _, _ in ROWS}
    try:
        for r in range(runs + 1):  # pass 0 is the warm-up
            order = ROWS[r % len(ROWS) :] + ROWS[: r % len(ROWS)]
            for name, fn, exact in order:
                dst = create_topic(bs, f"bench-out-{uuid.uuid4().hex[:8]}", partitions)
                started = time.perf_counter()
                fn(spark, bs, src, dst, chunk)
                seconds = time.perf_counter() - started
                out = count(bs, dst, partitions)
                ok = out >= n if not exact else out > n  # ours: n records + commit markers
                if not ok:
                    raise SystemExit(f"{name}: output has {out} offsets, expected {n}")
                if r > 0:
                    rates[name].append(n / seconds)
                print(
                    f"  {'warm-up' if r == 0 else f'run {r}'}: {name:<28} {seconds:6.2f} s "
                    f"{n / seconds:>10,.0f} rec/s",
                    flush=True,
                )
    finally:
        with contextlib.suppress(Exception):
            spark.stop()
    return {name: statistics.median(v) for name, v in rates.items()}


def main() -> None:
    """Parse arguments, run, print the table and the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bootstrap", help="existing cluster (default: start a local one)")
    parser.add_argument("-n", type=int, default=100_000, help="records")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--chunk", type=int, default=10_000, help="records per transaction")
    parser.add_argument(
        "--standalone", help="worker counts for a standalone cluster, e.g. 1,2 (default: local)"
    )
    args = parser.parse_args()
    cluster = None
    bs = args.bootstrap
    if bs is None:
        from sdk.testing.cluster import LocalCluster

        cluster = LocalCluster(nodes=1).start()
        bs = cluster.bootstrap_servers
    try:
        if args.standalone:
            _standalone(args, bs)
            return
        medians = run(bs, args.n, args.partitions, args.runs, args.chunk)
    finally:
        if cluster is not None:
            cluster.close()
    ours_rate = medians["exactly-once job (ours)"]
    print(f"\n{args.n:,} records, {args.partitions} partitions, median of {args.runs} runs")
    print(f"| {'row':<28} | {'records/s':>10} | {'ours / row':>10} |")
    print(f"| {'-' * 28} | {'-' * 9}: | {'-' * 9}: |")
    for name, rate in medians.items():
        print(f"| {name:<28} | {rate:>10,.0f} | {ours_rate / rate:>9.2f}x |")
    print(
        f"\nratio ours / native (Python copy) = "
        f"{ours_rate / medians['native sink, Python copy']:.2f}  (target >= 0.7)"
    )


def _standalone(args: argparse.Namespace, bs: str) -> None:
    """The rows on a standalone cluster per worker count; the table and the scaling."""
    from sdk.testing.spark_cluster import StandaloneSpark

    counts = [int(w) for w in args.standalone.split(",")]
    by_workers: dict[int, dict[str, float]] = {}
    for workers in counts:
        print(f"standalone cluster: {workers} worker(s), 1 core each", flush=True)
        with StandaloneSpark(workers=workers, cores=1, python_path=[str(ROOT)]) as spark_cluster:
            by_workers[workers] = run(
                bs, args.n, args.partitions, args.runs, args.chunk, spark_cluster.master_url
            )
    print(f"\n{args.n:,} records, {args.partitions} partitions, median of {args.runs} runs")
    print("| row | " + " | ".join(f"{w} worker(s) records/s" for w in counts) + " | scaling |")
    print("| --- |" + " ---: |" * (len(counts) + 1))
    first, last = counts[0], counts[-1]
    for name, _, _ in ROWS:
        rates = [by_workers[w][name] for w in counts]
        scaling = by_workers[last][name] / by_workers[first][name]
        cells = " | ".join(f"{r:,.0f}" for r in rates)
        print(f"| {name} | {cells} | {scaling:.2f}x |")
    for w in counts:
        ratio = by_workers[w]["exactly-once job (ours)"] / by_workers[w]["native sink, Python copy"]
        print(f"ours / native (Python copy), {w} worker(s): {ratio:.2f}  (target >= 0.8)")
    ours = [by_workers[w]["exactly-once job (ours)"] for w in (first, last)]
    print(f"ours, {first} -> {last} workers: {ours[1] / ours[0]:.2f}x  (target >= 1.6)")


if __name__ == "__main__":
    main()
