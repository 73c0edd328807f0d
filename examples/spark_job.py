"""Exactly-once Kafka → PySpark → Kafka batch job against an embedded local Kafka cluster.

Run: ``.venv/bin/python examples/spark_job.py`` (starts a 1-node cluster, seeds 20,000 records
in 4 partitions, runs the job - explain, progress, summary -, runs it again to show that a
re-run has nothing to do, seeds 5,000 more and runs a third time, then counts the
read_committed output).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from confluent_kafka import Consumer, Producer, TopicPartition

from sdk import OutputRecord
from sdk.testing.admin import create_topic
from sdk.testing.cluster import LocalCluster
from spark_integration import BatchJobConfig, ExactlyOnceBatchJob, local_session


def upper(records: Iterator[Any]) -> list[OutputRecord]:
    """The transform: runs on the executors, once per chunk of input records."""
    return [OutputRecord("words-upper", r.value.upper(), key=r.key) for r in records]


def seed(bs: str, first: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bs, "linger.ms": 20})
    for i in range(first, first + count):
        producer.produce("words", key=f"k{i % 100}", value=f"word-{i}")
        producer.poll(0)
    producer.flush(30)


def count(bs: str) -> int:
    consumer = Consumer(
        {"bootstrap.servers": bs, "group.id": "count", "isolation.level": "read_committed"}
    )
    total = 0
    for p in range(4):
        seen: set[int] = set()
        consumer.assign([TopicPartition("words-upper", p, 0)])
        while True:
            msgs = consumer.consume(1000, 2.0)
            if not msgs:
                break
            seen.update(m.offset() for m in msgs if not m.error())
        total += len(seen)
    consumer.close()
    return total


def main() -> None:
    with LocalCluster(nodes=1) as cluster:
        bs = cluster.bootstrap_servers
        create_topic(bs, "words", 4)
        create_topic(bs, "words-upper", 4)
        seed(bs, 0, 20_000)
        spark = local_session("spark-job-example")
        config = BatchJobConfig.exactly_once(
            job_name="upper",
            input_topics=["words"],
            bootstrap_servers=bs,
            group_id="upper-job",
            transactional_id_prefix="example-",
            max_records_per_transaction=2_000,
            progress_interval_s=1.0,
        )
        job = ExactlyOnceBatchJob(spark, config, progress=print)
        job.run(upper)
        print("\n-- run again: nothing new to do")
        job.run(upper)
        print("\n-- 5,000 more input records, run again")
        seed(bs, 20_000, 5_000)
        job.run(upper)
        spark.stop()
        print(f"\nread_committed output: {count(bs)} records (expected 25000)")


if __name__ == "__main__":
    main()
