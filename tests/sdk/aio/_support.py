"""Readers for the asyncio tests: raw confluent-kafka, not the SDK."""

from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition

__all__ = ["read_all"]


def read_all(bootstrap: str, topic: str, partitions: int, committed: bool = True) -> list[bytes]:
    """Every record of ``topic`` (read_committed by default), read to the end."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{time.time_ns()}",
            "isolation.level": "read_committed" if committed else "read_uncommitted",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[bytes] = []
    eof: set[int] = set()
    deadline = time.monotonic() + 30
    try:
        while len(eof) < partitions and time.monotonic() < deadline:
            for m in c.consume(500, 0.5):
                if m.error():
                    eof.add(m.partition())
                    continue
                eof.discard(m.partition())
                out.append(m.value())
    finally:
        c.close()
    return out
