"""Shared helpers of the producer tests: profiles and an independent read-back client."""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import Consumer

from sdk.profiles import ProducerProfile


def profile(bootstrap: str, guarantee: str = "at_least_once", **kw: Any) -> ProducerProfile:
    if guarantee == "exactly_once" and "transactional_id" not in kw:
        kw["transactional_id"] = f"t-{uuid.uuid4().hex[:8]}"
    return ProducerProfile(guarantee=guarantee, bootstrap_servers=bootstrap, **kw)


def read_all(
    bootstrap: str,
    topic: str,
    expect: int | None = None,
    *,
    timeout: float = 60.0,
    idle: float = 3.0,
) -> list[Any]:
    """Read a topic from the start with a raw read_committed consumer (not the SDK)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"verify-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    out: list[Any] = []
    deadline = time.monotonic() + timeout
    last = time.monotonic()
    try:
        while time.monotonic() < deadline:
            if expect is not None and len(out) >= expect:
                break
            msgs = consumer.consume(1000, 0.5)
            got = [m for m in msgs if not m.error()]
            out += got
            if got:
                last = time.monotonic()
            elif expect is None and time.monotonic() - last > (idle if out else idle * 3):
                break
    finally:
        consumer.close()
    return out
