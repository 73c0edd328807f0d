"""A work queue on Kafka: N worker processes share jobs from a 2-partition topic (share group).

Run: ``.venv/bin/python examples/work_queue.py [--jobs 3000] [--workers 4]``. Uses
``KAFKA_BOOTSTRAP_SERVERS`` if set, else starts an embedded 1-node cluster.

The point-to-point model (docs/queues.md): every worker takes jobs from the same topic, each
job goes to one of them, and there can be more workers than partitions (a consumer group would
leave all but two of them idle here). Jobs are handled at_least_once: a job is acknowledged
(ACCEPT) only after its handler finished; a failing job is released and comes back with its
``delivery_count`` raised; a job that fails on every delivery ("poison") is written to the
dead-letter topic and rejected, without holding up the jobs behind it. Each finished job is
recorded in SQLite keyed by job id, so a duplicate (possible at_least_once) is absorbed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer as RawConsumer
from confluent_kafka import Producer as RawProducer

from sdk import ConsumerRecord
from sdk.profiles import QueueProfile
from sdk.queue import QueueConsumer
from sdk.testing.admin import create_topic
from sdk.testing.backends import bootstrap_servers

POISON = 13  # this job fails on every delivery


def submit_jobs(bootstrap: str, topic: str, jobs: int) -> None:
    """Queue ``jobs`` jobs (small producer batches: a share group hands out whole batches)."""
    p = RawProducer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 4096})
    for job in range(jobs):
        p.produce(topic, key=f"job-{job}", value=str(job))
        if job % 1000 == 0:
            p.poll(0)
    assert p.flush(60) == 0


def worker(bootstrap: str, topic: str, group: str, db: str, idle_s: float) -> None:
    """One worker process: handle jobs until the queue has been idle for ``idle_s``."""
    done = sqlite3.connect(db, timeout=30, isolation_level=None)
    done.execute("PRAGMA journal_mode=WAL")

    def handle(job: ConsumerRecord) -> None:
        number = int(job.value)
        if number == POISON:
            raise ValueError(f"job {number} cannot be done (delivery {job.delivery_count})")
        if number % 97 == 0 and job.delivery_count == 1:
            raise ConnectionError("a flaky downstream: the job is released and comes back")
        done.execute(
            "INSERT OR IGNORE INTO done VALUES (?, ?, ?)",
            (number, os.getpid(), job.delivery_count),
        )

    profile = QueueProfile(
        guarantee="at_least_once",
        bootstrap_servers=bootstrap,
        group_id=group,
        record_lock_duration_ms=15_000,
        failure={"attempts": 3, "on_failure": "dlq", "dlq_topic": f"{topic}-dlq"},
    )
    with QueueConsumer(profile, [topic]) as queue:
        stats = queue.run(handle, idle_timeout_s=idle_s, handle_sigterm=True)
    print(
        f"  worker {os.getpid()}: {stats.handled} done, {stats.released} released, "
        f"{stats.rejected} rejected (dead-lettered {stats.dead_lettered})",
        flush=True,
    )


def dead_letters(bootstrap: str, topic: str) -> list[tuple[str, str]]:
    """Read the dead-letter topic with a plain consumer: (job, why) per dead job."""
    c = RawConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"dlq-{time.time_ns()}",
            "auto.offset.reset": "earliest",
        }
    )
    c.subscribe([topic])
    out: list[tuple[str, str]] = []
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not out:
        for m in c.consume(10, 0.5):
            if m.error() is None:
                headers = {k: (v or b"").decode() for k, v in m.headers() or []}
                out.append((m.value().decode(), headers.get("dlq.error.message", "")))
    c.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=3_000)
    parser.add_argument("--workers", type=int, default=4)
    args = parser.parse_args()
    started = time.monotonic()
    with bootstrap_servers() as bootstrap, tempfile.TemporaryDirectory() as tmp:
        topic = f"jobs-{time.time_ns()}"
        create_topic(bootstrap, topic, 2)
        create_topic(bootstrap, f"{topic}-dlq", 1)
        submit_jobs(bootstrap, topic, args.jobs)
        db = str(Path(tmp) / "done.db")
        sqlite3.connect(db).execute("CREATE TABLE done (job INTEGER PRIMARY KEY, pid, delivery)")
        print(f"work queue: {args.jobs} jobs on 2 partitions, {args.workers} workers")
        procs = [
            multiprocessing.Process(target=worker, args=(bootstrap, topic, "job-workers", db, 8.0))
            for _ in range(args.workers)
        ]
        for p in procs:
            p.start()
        for p in procs:
            p.join(300)
        rows = sqlite3.connect(db).execute("SELECT pid, COUNT(*) FROM done GROUP BY pid")
        per_worker = sorted((n for _, n in rows), reverse=True)
        finished = sum(per_worker)
        dead = dead_letters(bootstrap, f"{topic}-dlq")
    busy = len(per_worker)
    print(f"work queue: {finished} jobs done by {busy} workers {per_worker}")
    print(f"work queue: dead-lettered {dead}")
    print(f"work queue: {time.monotonic() - started:.1f}s")
    ok = finished == args.jobs - 1 and [job for job, _ in dead] == [str(POISON)]
    print("work queue: OK" if ok else "work queue: MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
