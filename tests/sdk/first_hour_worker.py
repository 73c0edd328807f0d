"""A front end's ``run()`` in a process of its own: ``python -m tests.sdk.first_hour_worker ARGS``.

For the tests of an unreachable broker and of Ctrl-C (tests/sdk/test_first_hour.py). The JSON
says ``front`` (producer, consumer, async_consumer, processor, queue, sink), ``bootstrap``,
``topic``, ``group``, optionally ``setup_timeout_ms`` (the profile extra that bounds the wait for
a broker), ``ledger`` (an SQLite file: the consumer and the sink record each handled offset
there; the sink writes it in its own transaction) and ``slow_s`` (per record, so that a
Ctrl-C lands mid-run). Logging goes to stderr at WARNING, as an application that only calls
``logging.basicConfig()``. After ``ready`` (written to stdout once the run has begun) the last
stdout line is ``RESULT <json>``: the outcome, the exception's type and message, the seconds
taken and the counters.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import sys
import time
from typing import Any

from sdk import (
    Consumer,
    ConsumerProfile,
    ProcessingProfile,
    Processor,
    Producer,
    ProducerProfile,
)


def _ledger(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE IF NOT EXISTS handled (part INTEGER, off INTEGER)")
    return db


def main() -> None:
    args: dict[str, Any] = json.loads(sys.argv[1])
    logging.basicConfig(level=logging.WARNING, format="%(name)s %(levelname)s %(message)s")
    front, bs = args["front"], args["bootstrap"]
    topic, group = args.get("topic", "t"), args.get("group", "g")
    extras = {}
    if "setup_timeout_ms" in args:
        extras["socket.connection.setup.timeout.ms"] = int(args["setup_timeout_ms"])
    slow = float(args.get("slow_s", 0.0))
    ledger = _ledger(args["ledger"]) if args.get("ledger") else None
    # small batches: a Ctrl-C mid-topic leaves records unhandled (a run ends after its batch)
    consumer_profile = ConsumerProfile(
        guarantee="at_least_once",
        bootstrap_servers=bs,
        group_id=group,
        batch_size=10,
        extras=extras,
    )
    started = time.monotonic()
    stats: Any = None
    print("ready", flush=True)

    def handle(record: Any) -> None:
        if ledger is not None:
            ledger.execute("INSERT INTO handled VALUES (?, ?)", (record.partition, record.offset))
        time.sleep(slow)

    try:
        if front == "producer":
            with Producer(
                ProducerProfile(guarantee="at_least_once", bootstrap_servers=bs, extras=extras)
            ) as producer:
                producer.send(topic, b"v")
        elif front == "consumer":
            with Consumer(consumer_profile, [topic]) as consumer:
                stats = consumer.run(handle)
        elif front == "async_consumer":
            from sdk.aio import AsyncConsumer

            async def handle_async(record: Any) -> None:
                handle(record)

            async def go() -> Any:
                async with AsyncConsumer(consumer_profile, [topic]) as consumer:
                    return await consumer.run(handle_async)

            stats = asyncio.run(go())
        elif front == "processor":
            profile = ProcessingProfile(
                guarantee="exactly_once",
                bootstrap_servers=bs,
                consumer={"group_id": group, "batch_size": 10},
                producer={"transactional_id_prefix": f"{group}-", "extras": extras},
            )
            out = args.get("output", topic + "-out")

            def process(record: Any) -> Any:
                time.sleep(slow)
                from sdk import OutputRecord

                return [OutputRecord(out, record.value, key=record.key)]

            with Processor(profile, [topic], instance_id="0") as processor:
                stats = processor.run(process)
        elif front == "queue":
            from sdk.profiles import QueueProfile
            from sdk.queue import QueueConsumer

            queue_profile = QueueProfile(
                guarantee="at_least_once", bootstrap_servers=bs, group_id=group, extras=extras
            )
            with QueueConsumer(queue_profile, [topic]) as queue:
                stats = queue.run(handle)
        elif front == "sink":
            from sdk.sink import DatabaseSink, sqlite

            def write(record: Any, tx: Any) -> None:
                tx.execute("INSERT INTO handled VALUES (?, ?)", (record.partition, record.offset))
                time.sleep(slow)

            sink_profile = ConsumerProfile(
                guarantee="exactly_once",
                bootstrap_servers=bs,
                group_id=group,
                batch_size=10,
                extras=extras,
            )
            with DatabaseSink(sink_profile, [topic], sqlite(args["ledger"])) as sink:
                stats = sink.run(write)
        else:
            raise SystemExit(f"unknown front end {front!r}")
        outcome: dict[str, Any] = {"outcome": "returned"}
    except Exception as exc:
        outcome = {"outcome": "raised", "type": type(exc).__name__, "message": str(exc)}
    outcome["seconds"] = round(time.monotonic() - started, 2)
    if stats is not None:
        outcome["stats"] = {
            k: v for k, v in vars(stats).items() if isinstance(v, int | float | str)
        }
    print("RESULT " + json.dumps(outcome), flush=True)


if __name__ == "__main__":
    main()
