"""At-least-once log collector: batches of log lines into SQLite, none lost, duplicates absorbed.

Run: ``.venv/bin/python examples/log_collector.py [--lines 5000]``. Uses
``KAFKA_BOOTSTRAP_SERVERS`` if set, else starts an embedded 1-node cluster.

Log aggregation is the textbook at-least-once workload: losing a line can hide an incident, while
a line delivered twice is harmless if the sink is idempotent. Here the sink keys every row by
``(topic, partition, offset)``, so a batch re-delivered after a crash is absorbed by
``INSERT OR IGNORE``. The SDK stores offsets only after a batch is in SQLite, retries a failing
batch (one transient sink failure is injected), and dead-letters malformed lines (poison pills)
to ``<topic>-dlq`` with headers saying why — the run never skips a line silently.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer as RawConsumer

from sdk import Consumer, ConsumerRecord
from sdk.producer import Producer
from sdk.profiles import ConsumerProfile, ProducerProfile
from sdk.testing.admin import create_topic
from sdk.testing.backends import bootstrap_servers

SERVICES = ["api", "billing", "search", "auth"]
LEVELS = ["DEBUG", "INFO", "INFO", "INFO", "WARN", "ERROR"]
MALFORMED = [b"{truncated", b"\xff\xfe not utf-8", b"[1, 2"]


def produce_logs(bootstrap: str, topic: str, lines: int) -> None:
    """Write ``lines`` JSON log lines (key = service) and a few malformed ones."""
    rng = random.Random(42)
    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bootstrap)
    with Producer(profile, key_serializer="str") as producer:
        for i in range(lines):
            service = rng.choice(SERVICES)
            line = {"service": service, "level": rng.choice(LEVELS), "msg": f"event {i}"}
            producer.send(topic, json.dumps(line).encode(), key=service)
            if i % max(1, lines // len(MALFORMED)) == 7:
                producer.send(topic, MALFORMED[i * len(MALFORMED) // lines], key="broken")
        producer.flush(60)


class SqliteSink:
    """An idempotent sink: one row per (topic, partition, offset)."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(str(path), isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS logs (topic TEXT, partition INTEGER, offset INTEGER, "
            "service TEXT, level TEXT, msg TEXT, PRIMARY KEY (topic, partition, offset))"
        )
        self.batches = 0
        self.transient_failures = 0

    def write(self, records: list[ConsumerRecord]) -> None:
        """Insert a batch in one transaction; the 3rd batch fails once (a locked database)."""
        self.batches += 1
        if self.batches == 3:
            self.transient_failures += 1
            raise sqlite3.OperationalError("database is locked (injected, transient)")
        rows = [
            (r.topic, r.partition, r.offset, r.value["service"], r.value["level"], r.value["msg"])
            for r in records
        ]
        self.db.execute("BEGIN")
        self.db.executemany("INSERT OR IGNORE INTO logs VALUES (?, ?, ?, ?, ?, ?)", rows)
        self.db.execute("COMMIT")

    def per_level(self) -> dict[str, int]:
        q = "SELECT level, COUNT(*) FROM logs GROUP BY level ORDER BY level"
        return {level: int(n) for level, n in self.db.execute(q)}


def count_dead_letters(bootstrap: str, topic: str, expect: int) -> list[str]:
    """Read the dead-letter topic with an independent consumer; return the error types."""
    consumer = RawConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"dlq-reader-{time.time_ns()}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    found: list[str] = []
    deadline = time.monotonic() + 20
    while len(found) < expect and time.monotonic() < deadline:
        for m in consumer.consume(100, 0.5):
            if m.error() is None:
                headers = dict(m.headers() or [])
                found.append((headers.get("dlq.error.type") or b"?").decode())
    consumer.close()
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=5_000)
    args = parser.parse_args()
    started = time.monotonic()
    with bootstrap_servers() as bootstrap, tempfile.TemporaryDirectory() as tmp:
        topic = f"app-logs-{time.time_ns()}"
        create_topic(bootstrap, topic, 3)
        create_topic(bootstrap, f"{topic}-dlq", 1)
        produce_logs(bootstrap, topic, args.lines)

        profile = ConsumerProfile(
            guarantee="at_least_once",
            bootstrap_servers=bootstrap,
            group_id="log-collector",
            batch_size=500,
            failure={
                "attempts": 3,
                "backoff_initial_ms": 50,
                "retry_on": ["sqlite3.OperationalError"],
                "on_failure": "dlq",
                "dlq_topic": f"{topic}-dlq",
            },
        )
        sink = SqliteSink(Path(tmp) / "logs.db")
        with Consumer(profile, [topic], value_deserializer="json") as consumer:
            # SIGTERM (e.g. from a container runtime) stops after the batch in hand and
            # commits what is in SQLite; idle_timeout_s ends this demo once the topic is drained.
            stats = consumer.run_batch(sink.write, idle_timeout_s=3.0, handle_sigterm=True)
        levels = sink.per_level()
        stored = sum(levels.values())
        dead = count_dead_letters(bootstrap, f"{topic}-dlq", len(MALFORMED))
    print(f"log collector: stored {stored}/{args.lines} log lines in SQLite: {levels}")
    print(
        f"log collector: {stats.deserialization_failures} malformed lines dead-lettered "
        f"({', '.join(dead)}); {sink.transient_failures} transient sink failure retried; "
        f"{stats.polled} records polled in {sink.batches} handler calls; "
        f"{time.monotonic() - started:.1f}s"
    )
    ok = stored == args.lines and len(dead) == len(MALFORMED) and stats.handler_failures == 0
    print("log collector: OK" if ok else "log collector: MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
