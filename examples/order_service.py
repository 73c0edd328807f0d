"""Exactly-once order service: validate orders, emit confirmations, dead-letter bad ones.

Run: ``.venv/bin/python examples/order_service.py [--orders 2000]``. Uses
``KAFKA_BOOTSTRAP_SERVERS`` if set, else starts an embedded 1-node cluster.

Each input order is consumed, validated and turned into a confirmation *and* an inventory
reservation; both outputs and the input offset are one Kafka transaction, so a crash at any
point neither loses nor repeats a confirmation. An order that fails validation is retried per
the profile's failure policy and then written to the dead-letter topic inside the same
transaction (with the error in its headers).
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import Counter
from typing import Any

from confluent_kafka import Consumer

from sdk import OutputRecord, Processor
from sdk.producer import Producer, ProducerRecord
from sdk.profiles import load_profiles
from sdk.testing.admin import create_topic
from sdk.testing.backends import bootstrap_servers


def read_committed(bootstrap: str, topics: list[str], expect: int) -> Counter[str]:
    """Count records per topic as a read_committed reader sees them."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"audit-{time.time_ns()}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe(topics)
    counts: Counter[str] = Counter()
    idle_since = time.monotonic()
    while sum(counts.values()) < expect and time.monotonic() - idle_since < 10:
        msgs = [m for m in consumer.consume(1000, 0.5) if not m.error()]
        if msgs:
            idle_since = time.monotonic()
            counts.update(m.topic() for m in msgs)
    consumer.close()
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--orders", type=int, default=2000)
    args = parser.parse_args()
    run = time.time_ns()
    orders, confirmed, inventory, dlq = (
        f"{t}-{run}" for t in ("orders", "confirmed", "inventory", "orders-dlq")
    )
    with bootstrap_servers() as bootstrap:
        for topic in (orders, confirmed, inventory, dlq):
            create_topic(bootstrap, topic, 3)
        profiles = load_profiles(
            {
                "defaults": {"bootstrap_servers": bootstrap},
                "profiles": {
                    "orders": {
                        "guarantee": "exactly_once",
                        "group_id": f"order-service-{run}",
                        "transactional_id_prefix": "order-service-",
                        "failure": {
                            "attempts": 2,
                            "backoff_initial_ms": 10,
                            "on_failure": "dlq",
                            "dlq_topic": dlq,
                        },
                    },
                    "ingest": "at_least_once",
                },
            }
        )
        # 1. Some web frontend places orders (at-least-once is enough for the input side).
        bad = 0
        with Producer(
            profiles.producer("ingest"), value_serializer="json", key_serializer="str"
        ) as p:
            records = []
            for i in range(args.orders):
                quantity = -1 if i % 97 == 0 else 1 + i % 5  # a few invalid orders
                bad += quantity < 0
                records.append(
                    ProducerRecord(
                        orders,
                        {"order": i, "sku": f"sku-{i % 13}", "qty": quantity},
                        f"customer-{i % 50}",
                    )
                )
            p.send_many(records)

        # 2. The order service: one transaction = outputs + input offsets.
        def handle(record: Any) -> list[OutputRecord]:
            order = json.loads(record.value)
            if order["qty"] <= 0:
                raise ValueError(f"order {order['order']}: quantity must be positive")
            confirmation = json.dumps({"order": order["order"], "status": "confirmed"}).encode()
            reservation = json.dumps({"sku": order["sku"], "reserve": order["qty"]}).encode()
            return [
                OutputRecord(confirmed, confirmation, key=record.key),
                OutputRecord(inventory, reservation, key=order["sku"].encode()),
            ]

        service = Processor(profiles.processing("orders"), [orders], instance_id="svc-0")
        thread = threading.Thread(target=service.run, args=(handle,))
        thread.start()
        good = args.orders - bad
        counts = read_committed(bootstrap, [confirmed, inventory, dlq], 2 * good + bad)
        service.stop()
        thread.join(60)
        stats = service.stats
        print(
            f"order service: {args.orders} orders in; {counts[confirmed]} confirmed, "
            f"{counts[inventory]} reservations, {counts[dlq]} dead-lettered "
            f"(expected {good}/{good}/{bad}); transactions committed: {stats.commits}"
        )
        if (counts[confirmed], counts[inventory], counts[dlq]) != (good, good, bad):
            raise SystemExit("output does not match the input exactly once")


if __name__ == "__main__":
    main()
