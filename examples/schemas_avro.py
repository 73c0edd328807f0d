"""Avro orders through a schema registry, at least once, a bad record dead-lettered.

Run against a local broker and registry::

    python -m sdk.testing.cluster up          # prints the bootstrap servers
    python -m sdk.testing.registry up         # prints the registry's URL (Java 21+)
    export KSEM_BOOTSTRAP_SERVERS=... KSEM_SCHEMA_REGISTRY_URL=...
    python examples/schemas_avro.py --orders 100

A producer writes Avro orders (the schema registered on first use under ``<topic>-value``),
one record that is not Avro slips in, and an at_least_once consumer reads them back: the good
ones decoded into dicts, the bad one dead-lettered with its raw bytes. ``KAFKA_BOOTSTRAP_SERVERS``
works too, as in the other examples.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

from confluent_kafka import Producer as RawProducer

from sdk.consumer import Consumer, ConsumerRecord
from sdk.producer import Producer
from sdk.profiles import ConsumerProfile, ProducerProfile
from sdk.schemas import SchemaRegistryConfig, avro_deserializer, avro_serializer
from sdk.testing.admin import create_topic

ORDER = """{
  "type": "record", "name": "Order", "namespace": "shop",
  "fields": [
    {"name": "id", "type": "long"},
    {"name": "item", "type": "string"},
    {"name": "quantity", "type": "int"}
  ]
}"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--orders", type=int, default=100)
    args = parser.parse_args()
    bootstrap = os.environ.get("KSEM_BOOTSTRAP_SERVERS") or os.environ.get(
        "KAFKA_BOOTSTRAP_SERVERS"
    )
    if not bootstrap or not os.environ.get("KSEM_SCHEMA_REGISTRY_URL"):
        print(__doc__, file=sys.stderr)
        return 2
    run = time.time_ns()
    orders, dlq = f"orders-avro-{run}", f"orders-avro-dlq-{run}"
    create_topic(bootstrap, orders, 3)
    create_topic(bootstrap, dlq, 1)
    registry = SchemaRegistryConfig()  # url from KSEM_SCHEMA_REGISTRY_URL

    producer_profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bootstrap)
    with Producer(
        producer_profile, key_serializer="str", value_serializer=avro_serializer(registry, ORDER)
    ) as producer:
        for i in range(args.orders):
            producer.send(
                orders,
                {"id": i, "item": f"item-{i % 7}", "quantity": 1 + i % 3},
                key=f"customer-{i % 10}",
            )
    # a record that is not in the registry's wire format: a poison record for the consumer
    raw = RawProducer({"bootstrap.servers": bootstrap})
    raw.produce(orders, key=b"customer-0", value=b"not avro")
    raw.flush(30)

    consumer_profile = ConsumerProfile(
        guarantee="at_least_once",
        bootstrap_servers=bootstrap,
        group_id=f"orders-avro-{run}",
        failure={"on_failure": "dlq", "dlq_topic": dlq},
    )
    quantities: dict[str, int] = {}

    def handle(record: ConsumerRecord) -> None:
        order = record.value  # a dict, decoded with the writer's schema
        quantities[order["item"]] = quantities.get(order["item"], 0) + order["quantity"]

    with Consumer(
        consumer_profile,
        [orders],
        key_deserializer="str",
        value_deserializer=avro_deserializer(registry),
    ) as consumer:
        stats = consumer.run(handle, max_records=args.orders + 1, idle_timeout_s=15)
    print(f"orders decoded: {stats.handled}, dead-lettered: {stats.dead_lettered}")
    print("quantity per item:", dict(sorted(quantities.items())))
    ok = stats.handled == args.orders and stats.dead_lettered == 1
    print("schemas avro: OK" if ok else "schemas avro: FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
