"""Queue test helpers: profiles, and a share-group reader that is not the SDK."""

from __future__ import annotations

import time
from typing import Any

import confluent_kafka

from sdk.profiles import QueueProfile
from tests.sdk.consumer._support import seed

__all__ = ["leftovers", "queue_profile", "seed_in_small_batches"]

FAST_LOCK_MS = 5_000
"""Record lock of the tests' share groups: a killed worker's records are back in seconds (the
embedded cluster lowers the broker's floor to 1 s)."""


def queue_profile(bootstrap: str, guarantee: str, group: str, **kw: Any) -> QueueProfile:
    kw.setdefault("record_lock_duration_ms", FAST_LOCK_MS)
    kw.setdefault("poll_timeout_ms", 200)
    return QueueProfile(guarantee=guarantee, bootstrap_servers=bootstrap, group_id=group, **kw)


def leftovers(bootstrap: str, group: str, topic: str, seconds: float) -> list[tuple[bytes, int]]:
    """What the share group still hands out: ``(value, delivery_count)`` of each record a raw
    confluent-kafka ``ShareConsumer`` (implicit acknowledgement) gets within ``seconds``."""
    c = confluent_kafka.ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
    c.subscribe([topic])
    out: list[tuple[bytes, int]] = []
    deadline = time.monotonic() + seconds
    try:
        while time.monotonic() < deadline:
            for m in c.poll(0.3):
                if m.error() is None:
                    out.append((m.value(), m.delivery_count() or 0))
    finally:
        c.close()
    return out


def seed_in_small_batches(bootstrap: str, topic: str, count: int) -> None:
    """Like ``tests.sdk.consumer._support.seed``, in producer batches of at most 4 KB: a share
    group acquires whole batches, so a poll hands out about one batch per partition (big
    batches make polls of thousands of records, see docs/queues.md)."""
    seed(bootstrap, topic, count, producer_config={"batch.size": 4096})
