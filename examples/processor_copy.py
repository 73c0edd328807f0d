"""Exactly-once copy with sdk.processor.Processor against an embedded local Kafka cluster.

Run: ``.venv/bin/python examples/processor_copy.py`` (starts a 1-node cluster, seeds 10,000
records, copies them upper-cased inside transactions, and counts the read_committed output).
"""

from __future__ import annotations

import threading
import time
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from sdk import OutputRecord, Processor
from sdk.profiles import ProcessingProfile
from sdk.testing.admin import create_topic
from sdk.testing.cluster import LocalCluster

N = 10_000


def main() -> None:
    with LocalCluster(nodes=1) as cluster:
        bs = cluster.bootstrap_servers
        create_topic(bs, "words", 4)
        create_topic(bs, "words-upper", 4)
        producer = Producer({"bootstrap.servers": bs})
        for i in range(N):
            producer.produce("words", key=f"k{i % 100}", value=f"word-{i}")
            producer.poll(0)
        producer.flush(30)

        profile = ProcessingProfile(
            guarantee="exactly_once",
            bootstrap_servers=bs,  # the guarantee and the cluster are given once, for both sides
            consumer={"group_id": "copy"},
            producer={"transactional_id_prefix": "copy-"},
            commit_interval_ms=100,
        )

        def upper(record: Any) -> list[OutputRecord]:
            return [OutputRecord("words-upper", record.value.upper(), key=record.key)]

        # instance_id must be stable across restarts of this instance (see docs/processor.md).
        processor = Processor(profile, ["words"], instance_id="worker-0")
        thread = threading.Thread(target=processor.run, args=(upper,))
        thread.start()

        reader = Consumer(
            {
                "bootstrap.servers": bs,
                "group.id": "reader",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
            }
        )
        reader.assign([TopicPartition("words-upper", p, 0) for p in range(4)])
        seen = 0
        deadline = time.monotonic() + 60
        while seen < N and time.monotonic() < deadline:
            seen += sum(1 for m in reader.consume(1000, 0.5) if m.error() is None)
        reader.close()
        processor.stop()
        thread.join(30)
        s = processor.stats
        print(f"read_committed output: {seen}/{N}; transactions committed: {s.commits}")


if __name__ == "__main__":
    main()
