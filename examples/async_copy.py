"""Exactly-once enrichment with sdk.aio.AsyncProcessor: an async handler inside transactions.

Run: ``.venv/bin/python examples/async_copy.py [--records 10000]``. Uses
``KAFKA_BOOTSTRAP_SERVERS`` if set, else starts an embedded 1-node cluster.

Each input record is enriched by an ``async`` handler that awaits a (simulated) lookup, the
way a service awaits a database or an HTTP API, and the output records and the input offsets
commit as one Kafka transaction. Halfway through, the running task is **cancelled**, as a
service's shutdown or a supervisor would cancel it: the open transaction is aborted, nothing
of it is visible, and a second processor with the same ``instance_id`` finishes the job. A raw
read_committed reader (not the SDK) then counts every input exactly once in the output.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections import Counter

from confluent_kafka import Consumer, Producer, TopicPartition

from sdk import ConsumerRecord, OutputRecord
from sdk.aio import AsyncProcessor
from sdk.profiles import ProcessingProfile
from sdk.testing.admin import create_topic
from sdk.testing.backends import bootstrap_servers

PARTITIONS = 4


def profile(bootstrap: str, group: str) -> ProcessingProfile:
    return ProcessingProfile(
        guarantee="exactly_once",
        bootstrap_servers=bootstrap,
        consumer={"group_id": group},
        producer={"transactional_id_prefix": f"{group}-"},
        commit_interval_ms=100,
    )


def read_committed(bootstrap: str, topic: str) -> Counter[bytes]:
    """How often each value is in ``topic`` for a read_committed reader, read to its end."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"audit-{time.time_ns()}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen: Counter[bytes] = Counter()
    eof: set[int] = set()
    deadline = time.monotonic() + 60
    while len(eof) < PARTITIONS and time.monotonic() < deadline:
        for m in consumer.consume(1000, 0.5):
            if m.error():
                eof.add(m.partition())
            else:
                eof.discard(m.partition())
                seen[m.value()] += 1
    consumer.close()
    return seen


async def copy(bootstrap: str, src: str, dst: str, group: str, n: int) -> int:
    handled = 0

    async def enrich(record: ConsumerRecord) -> list[OutputRecord]:
        nonlocal handled
        await asyncio.sleep(0)  # the lookup a real service awaits (a database, an API)
        handled += 1
        return [OutputRecord(dst, record.value + b":enriched", record.key)]

    # 1. A first processor is cancelled halfway (a shutdown, a supervisor's timeout).
    first = AsyncProcessor(profile(bootstrap, group), [src], instance_id="enricher-0")
    task = asyncio.create_task(first.run(enrich))
    while handled < n // 2 and not task.done():
        await asyncio.sleep(0.01)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):  # we cancelled it: expected
        await task
    print(
        f"async copy: cancelled after {handled} records: {first.stats.commits} transactions "
        f"committed, {first.stats.aborts} aborted (the one open at the cancel)"
    )

    # 2. The same instance id resumes from the committed offsets; stop once all are in.
    async with AsyncProcessor(profile(bootstrap, group), [src], instance_id="enricher-0") as second:
        run = asyncio.create_task(second.run(enrich, handle_sigterm=True))
        began = time.monotonic()
        while not run.done() and time.monotonic() - began < 120:
            # `committed` holds the partitions a processor committed itself: one the first
            # processor finished is never committed again by the second
            committed = {**first.committed, **second.committed}
            if second.stats.records_in and sum(committed.values()) >= n:
                break
            await asyncio.sleep(0.1)
        second.stop()
        stats = await run
    print(f"async copy: resumed and committed {stats.records_in} records")

    out = read_committed(bootstrap, dst)
    expected = {f"v{i}".encode() + b":enriched" for i in range(n)}
    missing = len(expected - set(out))
    duplicated = sum(c - 1 for c in out.values() if c > 1)
    print(
        f"async copy: read_committed output {sum(out.values())} records; "
        f"{missing} missing, {duplicated} duplicated"
    )
    if missing or duplicated:
        print("async copy: FAILED")
        return 1
    print("async copy: OK (every input exactly once)")
    return 0


def seed(bootstrap: str, topic: str, n: int) -> None:
    """Write ``n`` input records (the producer is gone when this returns, before the cluster)."""
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        producer.produce(topic, key=f"k{i % 100}", value=f"v{i}")
        producer.poll(0)
    producer.flush(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args()
    run = time.time_ns()
    src, dst, group = f"async-in-{run}", f"async-out-{run}", f"async-copy-{run}"
    with bootstrap_servers() as bootstrap:
        create_topic(bootstrap, src, PARTITIONS)
        create_topic(bootstrap, dst, PARTITIONS)
        seed(bootstrap, src, args.records)
        return asyncio.run(copy(bootstrap, src, dst, group, args.records))


if __name__ == "__main__":
    raise SystemExit(main())
