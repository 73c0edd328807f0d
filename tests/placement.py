"""Where keys land: Java's placement computed here, and an independent reader (kafka-python).

Shared by the placement tests of the SDK paths (tests/sdk/core, tests/sdk/producer) and of the
Spark paths (tests/spark_integration): every output path must place a key where Java's producer
would, ``(murmur2(key) & 0x7fffffff) % partitions``.
"""

from __future__ import annotations

import time
from collections import defaultdict

M = 0x5BD1E995
SEED = 0x9747B28C
MASK = 0xFFFFFFFF


def java_murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (clients/.../common/utils/Utils.java), as a signed 32-bit int.

    Written from the Java source's steps, independently of the SDK's partitioners, so the
    placement tests do not check the SDK against itself.
    """
    length = len(data)
    h = (SEED ^ length) & MASK
    for i in range(0, length - length % 4, 4):
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * M) & MASK
        k ^= k >> 24  # Java's >>> on an int: a logical shift of the 32-bit value
        k = (k * M) & MASK
        h = (h * M) & MASK
        h ^= k
    tail = length & ~3
    rest = length % 4
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * M) & MASK
    h ^= h >> 13
    h = (h * M) & MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def java_partition(key: bytes, partitions: int) -> int:
    """``BuiltInPartitioner.partitionForKey``: ``toPositive(murmur2(key)) % partitions``."""
    return (java_murmur2(key) & 0x7FFFFFFF) % partitions


def placement(
    bootstrap: str, topic: str, expected: int, timeout: float = 90.0
) -> dict[bytes, set[int]]:
    """Partitions each key was read from (read_committed, kafka-python: not the code under test).

    Reads until ``expected`` records arrived (or ``timeout``), then 1 s more to catch extras.
    """
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    try:
        parts = None
        deadline = time.monotonic() + 30
        while not parts and time.monotonic() < deadline:
            parts = consumer.partitions_for_topic(topic)
            if not parts:
                time.sleep(0.2)
        assert parts, f"topic {topic} has no partitions"
        consumer.assign([TopicPartition(topic, p) for p in sorted(parts)])
        consumer.seek_to_beginning()
        seen: dict[bytes, set[int]] = defaultdict(set)
        count = 0
        deadline = time.monotonic() + timeout
        settle: float | None = None
        while time.monotonic() < deadline and (settle is None or time.monotonic() < settle):
            for tp, records in consumer.poll(timeout_ms=500).items():
                for r in records:
                    seen[r.key].add(tp.partition)
                    count += 1
            if count >= expected and settle is None:
                settle = time.monotonic() + 1.0
        assert count == expected, f"read {count} records from {topic}, expected {expected}"
        return dict(seen)
    finally:
        consumer.close()
