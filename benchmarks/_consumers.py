"""Consumer cases: raw confluent-kafka, the SDK Consumer, kafka-python, Kafka's perf tool.

Every case reads the same pre-filled topic from the beginning with a new group; the clock
starts at the first record (a group join is not consumption speed) and stops when N records
were handled and, for the SDK, its final commit returned.
"""

from __future__ import annotations

import csv
import io
import time
import uuid
from typing import Any

from confluent_kafka import Consumer as RawConsumer
from confluent_kafka import TopicPartition

from benchmarks import _harness
from benchmarks._harness import Result, java_tool
from sdk.consumer import Consumer, ConsumerRecord
from sdk.profiles import ConsumerProfile

GROUP = "consumer"


def _group() -> str:
    return f"bench-{uuid.uuid4().hex[:8]}"


def _raw_profile_config(bootstrap: str) -> dict[str, Any]:
    """The SDK at_least_once consumer settings, with the run's fetch.queue.backoff.ms."""
    config = ConsumerProfile(
        guarantee="at_least_once", bootstrap_servers=bootstrap, group_id=_group()
    ).render()
    return _harness.raw_consumer_config(dict(config))


def handler(record: Any) -> None:
    """The per-record work of every handler case (the SDK's and the raw handler loop's)."""
    _ = record.value if isinstance(record, ConsumerRecord) else record.value()


def raw_confluent(bootstrap: str, name: str, n: int, size: int) -> Result:
    """The peer: consume() batches, store each batch's offsets after handling (alo settings)."""
    c = RawConsumer(_raw_profile_config(bootstrap))
    c.subscribe([name])
    seen, first = 0, 0.0
    while seen < n:
        msgs = c.consume(500, 1.0)
        if not msgs:
            continue
        if not first:
            first = time.perf_counter()
        last: dict[tuple[str, int], int] = {}
        for m in msgs:
            if m.error() is None:
                seen += 1
                last[(m.topic(), m.partition())] = m.offset()
        c.store_offsets(offsets=[TopicPartition(t, p, o + 1) for (t, p), o in last.items()])
    c.commit(asynchronous=False)
    seconds = time.perf_counter() - first
    c.close()
    return Result(GROUP, "raw confluent-kafka (alo settings)", size, seen, seconds)


def raw_handler_loop(bootstrap: str, name: str, n: int, size: int) -> Result:
    """The peer doing the SDK's work, as a competent user writes it by hand.

    Poll batches, call the same handler per record, store the batch's offsets after it.
    """
    c = RawConsumer(_raw_profile_config(bootstrap))
    c.subscribe([name])
    seen, first = 0, 0.0
    while seen < n:
        msgs = c.consume(500, 1.0)
        if not msgs:
            continue
        if not first:
            first = time.perf_counter()
        last: dict[tuple[str, int], int] = {}
        for m in msgs:
            if m.error() is None:
                handler(m)
                seen += 1
                last[(m.topic(), m.partition())] = m.offset()
        c.store_offsets(offsets=[TopicPartition(t, p, o + 1) for (t, p), o in last.items()])
    c.commit(asynchronous=False)
    seconds = time.perf_counter() - first
    c.close()
    return Result(GROUP, "raw confluent-kafka handler loop (alo settings)", size, seen, seconds)


def sdk_consumer(
    bootstrap: str, name: str, n: int, size: int, guarantee: str, batch: bool
) -> Result:
    """The SDK Consumer: ``run(handler)`` or ``run_batch(handler)`` until N records."""
    profile = ConsumerProfile(
        guarantee=guarantee,
        bootstrap_servers=bootstrap,
        group_id=_group(),
        **_harness.sdk_consumer_fields(),
    )
    first = 0.0

    def one(record: ConsumerRecord) -> None:
        # the handler's work (as handler()) with the clock start folded in: one Python call
        # per record, as in the raw handler loop
        nonlocal first
        if not first:
            first = time.perf_counter()
        _ = record.value

    def many(records: list[Any]) -> None:
        nonlocal first
        if not first:
            first = time.perf_counter()
        for record in records:
            handler(record)

    with Consumer(profile, [name]) as consumer:
        if batch:
            stats = consumer.run_batch(many, max_records=n)
        else:
            stats = consumer.run(one, max_records=n)
        # run() returns after its final commit; close() (leaving the group) is not counted,
        # as the raw loops stop their clock after their final commit, before close()
        seconds = time.perf_counter() - first
    label = f"SDK {guarantee} " + ("run_batch" if batch else "run")
    handled = getattr(stats, "handled", n)
    return Result(GROUP, label, size, int(handled or n), seconds)


def kafka_python(bootstrap: str, name: str, n: int, size: int) -> Result:
    """kafka-python's KafkaConsumer iterating, auto commit on."""
    from kafka import KafkaConsumer

    c = KafkaConsumer(
        name,
        bootstrap_servers=bootstrap.split(","),
        group_id=_group(),
        auto_offset_reset="earliest",
        max_poll_records=500,
    )
    seen, first = 0, 0.0
    for _ in c:
        if not first:
            first = time.perf_counter()
        seen += 1
        if seen >= n:
            break
    seconds = time.perf_counter() - first
    c.close()
    return Result(GROUP, "kafka-python", size, seen, seconds)


def perf_test(bootstrap: str, name: str, n: int, size: int) -> Result:
    """Kafka's ConsumerPerformance; its fetch rate excludes the group join."""
    out = java_tool(
        "org.apache.kafka.tools.ConsumerPerformance",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        name,
        "--messages",
        str(n),
        "--timeout",
        "60000",
        "--group",
        _group(),
    )
    lines = [line for line in out.splitlines() if line.strip()]
    header = next(i for i, line in enumerate(lines) if "nMsg.sec" in line)
    rows = list(csv.reader(io.StringIO("\n".join(lines[header:]))))
    cols = [c.strip() for c in rows[0]]
    values = dict(zip(cols, (v.strip() for v in rows[1]), strict=False))
    consumed = int(float(values["data.consumed.in.nMsg"]))
    rate = float(values.get("fetch.nMsg.sec") or values["nMsg.sec"])
    return Result(GROUP, "kafka-consumer-perf-test (Java)", size, consumed, consumed / rate)
