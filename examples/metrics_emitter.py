"""At-most-once metrics emitter: fire-and-forget gauges, never a duplicate, loss tolerated.

Run: ``.venv/bin/python examples/metrics_emitter.py [--seconds 5]``. Uses
``KAFKA_BOOTSTRAP_SERVERS`` if set, else starts an embedded 1-node cluster. A metrics stream is
the textbook at-most-once workload: a lost sample is replaced by the next one a second later,
while a duplicate would double-count a counter downstream.
"""

from __future__ import annotations

import argparse
import random
import time

from confluent_kafka import Consumer

from sdk.producer import Producer
from sdk.profiles import ProducerProfile
from sdk.testing.admin import create_topic
from sdk.testing.backends import bootstrap_servers

TOPIC = "metrics"
HOSTS = [f"web-{i}" for i in range(8)]


def count(bootstrap: str, topic: str, expect: int) -> int:
    """Count the records in ``topic`` with an independent consumer."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"count-{time.time_ns()}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    seen, idle_since = 0, time.monotonic()
    while seen < expect and time.monotonic() - idle_since < 5:
        msgs = [m for m in consumer.consume(1000, 0.5) if not m.error()]
        if msgs:
            seen, idle_since = seen + len(msgs), time.monotonic()
    consumer.close()
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args()
    with bootstrap_servers() as bootstrap:
        topic = f"{TOPIC}-{time.time_ns()}"
        create_topic(bootstrap, topic, 3)
        # acks=0, no retries, no idempotence: the profile refuses anything that could duplicate.
        profile = ProducerProfile(
            guarantee="at_most_once", bootstrap_servers=bootstrap, linger_ms=20
        )
        sent = 0
        with Producer(profile, key_serializer="str", value_serializer="json") as producer:
            deadline = time.monotonic() + args.seconds
            while time.monotonic() < deadline:
                for host in HOSTS:  # one sample per host per tick; the host is the key
                    producer.send(
                        topic,
                        {"host": host, "cpu": round(random.random(), 3), "ts": time.time()},
                        key=host,
                    )
                    sent += 1
                producer.poll(0)
                time.sleep(0.01)
        stored = count(bootstrap, topic, sent)
        print(
            f"metrics emitter: sent {sent} samples, {stored} stored, {sent - stored} lost "
            "(at-most-once: losses are possible, duplicates are not)"
        )
        if stored > sent:
            raise SystemExit("more records stored than sent: a duplicate")


if __name__ == "__main__":
    main()
