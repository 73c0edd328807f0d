"""The guarantees demo: one workload, three guarantees, real crashes, counted outcomes.

Run: ``./dev.sh demo`` (or ``.venv/bin/python examples/guarantees_demo.py [--records N]``).
Uses ``KAFKA_BOOTSTRAP_SERVERS`` if set, else starts an embedded 1-node Kafka cluster.

For each guarantee, N numbered records are copied from an input topic to an output topic by a
worker *process* running ``sdk.processor.Processor`` with that guarantee's profile. The worker
is SIGKILLed three times mid-stream (at 25 %, 50 % and 75 % of the input committed) and
restarted each time. Then a separate read_committed consumer counts the output: records lost
(never copied) and duplicated (copied more than once). Expected: at_most_once may lose but never
duplicates, at_least_once never loses but may duplicate, exactly_once does neither.

The queue rows do the same through a share group (``sdk.queue.QueueConsumer``, docs/queues.md):
the worker takes records from the queue, writes them to the output with an SDK Producer and
acknowledges them (ACCEPT) by the queue guarantee's order; a killed worker's acquired records
come back when their lock (2 s here) expires. A queue has no exactly-once, so two rows. The
kills land at 25 %, 50 % and 75 % of the output written. ``--no-queue`` leaves them out.

The database rows write the input into a SQLite file through ``sdk.sink.DatabaseSink``
(docs/database-sink.md) with plain INSERTs, each polled batch one database transaction: with
exactly_once the batch's next offsets are committed in that same transaction, with
at_least_once they go to Kafka after it (a kill in between repeats the batch). The kills land at
25 %, 50 % and 75 % of the input committed to the database; lost and duplicated records are
counted by SQL against the input. ``--no-database`` leaves them out.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import _demo_database as database
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from sdk.producer import Producer, ProducerRecord
from sdk.profiles import ProducerProfile
from sdk.testing.admin import create_topic
from sdk.testing.backends import bootstrap_servers

GUARANTEES = ("at_most_once", "at_least_once", "exactly_once")
QUEUE_GUARANTEES = ("at_most_once", "at_least_once")  # share groups have no transactions
PARTITIONS = 4
KILL_AT = (0.25, 0.50, 0.75)
LOCK_MS = 2_000  # a killed queue worker's records come back after this
Kind = Literal["group", "queue", "database"]


# --------------------------------------------------------------------------- the worker process
def worker(spec: dict[str, Any]) -> None:
    """Copy input → output under one guarantee until SIGTERM (runs in its own process)."""
    from sdk import OutputRecord, Processor
    from sdk.profiles import ProcessingProfile

    g, bs = spec["guarantee"], spec["bootstrap"]
    producer: dict[str, Any] = {"guarantee": g, "bootstrap_servers": bs, "linger_ms": 5}
    if g == "exactly_once":
        producer["transactional_id_prefix"] = f"{spec['group']}-"
    profile = ProcessingProfile(
        guarantee=g,
        consumer={
            "guarantee": g,
            "bootstrap_servers": bs,
            "group_id": spec["group"],
            "session_timeout_ms": 6000,
            "batch_size": 200,
            "auto_commit_interval_ms": 200,
            # static membership (a pod with a stable name): the restarted worker takes the
            # killed one's place at once instead of waiting out its session timeout
            "extras": {"group.instance.id": f"{spec['group']}-worker-0"},
        },
        producer=producer,
        commit_interval_ms=200,
    )
    seen = 0

    def copy(record: Any) -> list[OutputRecord]:
        nonlocal seen
        seen += 1
        if seen % 100 == 0:
            time.sleep(0.02)  # "work": keeps records in flight when the kill lands
        return [OutputRecord(spec["output"], record.value, key=record.key)]

    processor = Processor(profile, [spec["input"]], instance_id="worker-0")
    signal.signal(signal.SIGTERM, lambda *_: processor.stop())
    processor.run(copy)


def queue_worker(spec: dict[str, Any]) -> None:
    """Take records from the queue and write them to the output (its own process).

    at_least_once: the poll's records are written and flushed, then acknowledged (ACCEPT);
    at_most_once: they are acknowledged and committed first, then written.
    """
    from sdk import ConsumerRecord
    from sdk.profiles import QueueProfile
    from sdk.queue import QueueConsumer

    g, bs = spec["guarantee"], spec["bootstrap"]
    out = Producer(ProducerProfile(guarantee=g, bootstrap_servers=bs, linger_ms=5))
    profile = QueueProfile(
        guarantee=g, bootstrap_servers=bs, group_id=spec["group"], record_lock_duration_ms=LOCK_MS
    )

    def copy(records: list[ConsumerRecord]) -> None:
        out.send_many(ProducerRecord(spec["output"], r.value, r.key) for r in records)
        out.flush(30)  # acknowledged by the broker before the records are (at_least_once)
        time.sleep(0.02)  # "work": keeps records in flight when the kill lands

    with QueueConsumer(profile, [spec["input"]]) as queue:
        queue.run_batch(copy, handle_sigterm=True)
    out.close()


# --------------------------------------------------------------------------- the driver
def committed(bootstrap: str, group: str, topic: str) -> int:
    """Total committed input offset of ``group`` (read without joining it)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        for _ in range(30):
            with contextlib.suppress(KafkaException):
                tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
                return sum(max(tp.offset, 0) for tp in consumer.committed(tps, timeout=10))
            time.sleep(0.3)
        raise RuntimeError(f"cannot read the committed offsets of {group}")
    finally:
        consumer.close()


def count_output(bootstrap: str, topic: str) -> Counter[int]:
    """Count each record number in ``topic`` as a read_committed reader sees it, to its end.

    The end of each partition is its last stable offset (librdkafka's partition EOF under
    read_committed): what a later read would also see once the writers are stopped.
    """
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"audit-{time.time_ns()}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    counts: Counter[int] = Counter()
    at_end: set[int] = set()
    deadline = time.monotonic() + 120
    while len(at_end) < PARTITIONS and time.monotonic() < deadline:
        for m in consumer.consume(2000, 0.5):
            error = m.error()
            if error is None:
                counts[int(m.value())] += 1
            elif error.code() == KafkaError._PARTITION_EOF:
                at_end.add(m.partition())
    consumer.close()
    if len(at_end) < PARTITIONS:
        raise RuntimeError(f"{topic}: not read to its end in 120 s")
    return counts


def written(bootstrap: str, topic: str) -> int:
    """Records in ``topic`` so far (sum of end offsets; the queue rows write no transactions)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"audit-{time.time_ns()}"})
    try:
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(PARTITIONS)
        )
    finally:
        consumer.close()


def wait_queue_done(
    bootstrap: str,
    output: str,
    guarantee: str,
    n: int,
    deadline: float,
    proc: subprocess.Popen[bytes],
    log: Path,
) -> None:
    """Wait until a queue row is done: at_least_once every record in the output; at_most_once
    the output quiet for longer than a record lock (what is lost does not come back).

    A queue has no committed offset to watch, and a killed worker's records come back only
    when their lock expires, so the output is what is watched; at the deadline the row is
    counted as it is (a loss then shows in the table).
    """
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"queue {guarantee} worker exited; see {log}")
        if (now := written(bootstrap, output)) != last:
            last, since = now, time.monotonic()
        quiet = time.monotonic() - since
        if guarantee == "at_most_once" and quiet > LOCK_MS / 1000 + 3:
            return
        done = guarantee == "at_least_once" and now >= n and quiet > 1
        if done and len(count_output(bootstrap, output)) >= n:
            return
        time.sleep(0.5)


def start_worker(spec: dict[str, Any], log: Path) -> subprocess.Popen[bytes]:
    """Start a worker process running :func:`worker`."""
    root = Path(__file__).resolve().parents[1]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, __file__, "--worker", json.dumps(spec)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )


def row_label(kind: Kind, guarantee: str) -> str:
    """The row's name in the table."""
    return {"queue": f"queue {guarantee}", "database": f"{guarantee} → SQLite"}.get(kind, guarantee)


def run_guarantee(
    bootstrap: str, guarantee: str, n: int, workdir: Path, kind: Kind = "group"
) -> dict[str, Any]:
    """Copy ``n`` records under ``guarantee`` with three SIGKILLs; count lost and duplicated."""
    run = time.time_ns()
    queue, to_db = kind == "queue", kind == "database"
    label = row_label(kind, guarantee)
    spec: dict[str, Any] = {
        "guarantee": guarantee,
        "bootstrap": bootstrap,
        "input": f"demo-in-{kind}-{guarantee}-{run}",
        "output": f"demo-out-{kind}-{guarantee}-{run}",
        "group": f"demo-{kind}-{guarantee}-{run}",
        "kind": kind,
    }
    for topic in [spec["input"]] if to_db else [spec["input"], spec["output"]]:
        create_topic(bootstrap, topic, PARTITIONS)
    if to_db:
        spec["database"] = str(workdir / f"{guarantee}.db")
        database.prepare(spec["database"], n)
    # small producer batches: a share group hands out whole batches, each under one lock
    seed = ProducerProfile(
        guarantee="at_least_once",
        bootstrap_servers=bootstrap,
        linger_ms=20,
        extras={"batch.size": 4096} if queue else {},
    )
    with Producer(seed, key_serializer="str", value_serializer="str") as producer:
        producer.send_many(ProducerRecord(spec["input"], str(i), f"k{i % 100}") for i in range(n))

    def progress_kafka() -> int:
        if queue:
            return written(bootstrap, spec["output"])
        return committed(bootstrap, spec["group"], spec["input"])

    watch = database.DatabaseProgress(spec["database"], guarantee, spec["group"]) if to_db else None
    progress: Callable[[], int] = progress_kafka if watch is None else watch
    complete: Callable[[], int] = progress_kafka if watch is None else watch.complete
    log = workdir / f"{kind}-{guarantee}.log"
    proc = start_worker(spec, log)
    kills = []
    started = time.monotonic()
    try:
        for fraction in KILL_AT:
            while (done := progress()) < fraction * n:
                if proc.poll() is not None:
                    raise RuntimeError(f"{label} worker exited; see {log}")
                time.sleep(database.pause(done, fraction * n) if to_db else 0.1)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills.append(done)
            what = "written" if queue else "committed"
            print(f"  {label}: SIGKILL at {done:,}/{n:,} {what}; restarting", flush=True)
            proc = start_worker(spec, log)
        deadline = time.monotonic() + 300
        if queue:
            wait_queue_done(bootstrap, spec["output"], guarantee, n, deadline, proc, log)
        while not queue and complete() < n:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError(f"{label} did not finish; see {log}")
            time.sleep(0.2)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
        if watch is not None:
            watch.close()
    result: dict[str, Any] = {"guarantee": guarantee, "kind": kind, "label": label, "records": n}
    if to_db:
        result.update(database.count(spec["database"]))
    else:
        counts = count_output(bootstrap, spec["output"])
        output, distinct = sum(counts.values()), len(counts)
        result.update(output=output, lost=n - distinct, duplicated=output - distinct)
    return {**result, "kills": len(kills), "seconds": time.monotonic() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--guarantee", choices=GUARANTEES, action="append")
    parser.add_argument("--no-queue", action="store_true", help="leave out the queue rows")
    parser.add_argument(
        "--no-database", action="store_true", help="leave out the database (SQLite) rows"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        spec = json.loads(args.worker)
        workers = {"group": worker, "queue": queue_worker, "database": database.worker}
        workers[spec["kind"]](spec)
        return
    import tempfile

    results = []
    with (
        bootstrap_servers() as bootstrap,
        tempfile.TemporaryDirectory(prefix="guarantees-demo-") as tmp,
    ):
        for guarantee in args.guarantee or GUARANTEES:
            print(f"{guarantee}: copying {args.records:,} records, 3 worker crashes", flush=True)
            results.append(run_guarantee(bootstrap, guarantee, args.records, Path(tmp)))
        chosen = args.guarantee or GUARANTEES
        later: list[tuple[Kind, tuple[str, ...]]] = [
            ("queue", () if args.no_queue else QUEUE_GUARANTEES),
            ("database", () if args.no_database else database.GUARANTEES),
        ]
        for kind, guarantees in later:
            for guarantee in (g for g in guarantees if g in chosen):
                name = row_label(kind, guarantee)
                print(f"{name}: {args.records:,} records, 3 worker crashes", flush=True)
                results.append(run_guarantee(bootstrap, guarantee, args.records, Path(tmp), kind))
    print()
    header = ("guarantee", "records", "kills", "output", "lost", "duplicated")
    print(
        f"{header[0]:<23} "
        + " ".join(f"{h:>{w}}" for h, w in zip(header[1:], (8, 6, 8, 6, 11), strict=True))
    )
    for r in results:
        print(
            f"{r['label']:<23} {r['records']:>8,} {r['kills']:>6} {r['output']:>8,} "
            f"{r['lost']:>6,} {r['duplicated']:>11,}"
        )
    print()
    for r in results:
        if r["kind"] == "database" and r["guarantee"] == "at_least_once":
            print(database.explain(r), end="\n\n")
    broken = [
        r["label"]
        for r in results
        if (r["guarantee"] == "at_most_once" and r["duplicated"])
        or (r["guarantee"] == "at_least_once" and r["lost"])
        or (r["guarantee"] == "exactly_once" and (r["lost"] or r["duplicated"]))
    ]
    if broken:
        raise SystemExit(f"guarantee violated: {', '.join(broken)}")
    print(
        "every guarantee held: at-most-once never duplicated, at-least-once never lost, "
        "exactly-once did neither."
    )


if __name__ == "__main__":
    main()
