"""Producer cases: raw confluent-kafka, the SDK per guarantee, kafka-python, Kafka's perf tool."""

from __future__ import annotations

import re
import time
import uuid
from typing import Any

from confluent_kafka import Producer as RawProducer

from benchmarks._harness import Payloads, Result, java_tool, percentiles, topic
from sdk.producer import Producer
from sdk.profiles import ProducerProfile

GROUP = "producer"
SAMPLE = 100  # latency: every 100th record


def _profile(bootstrap: str, guarantee: str) -> ProducerProfile:
    extra: dict[str, Any] = {}
    if guarantee == "exactly_once":
        extra["transactional_id"] = f"bench-{uuid.uuid4().hex[:8]}"
    return ProducerProfile(
        guarantee=guarantee,
        bootstrap_servers=bootstrap,
        linger_ms=5,  # every other setting: librdkafka's defaults, same for raw and SDK
        **extra,
    )


RAW_POSITIONAL = "raw confluent-kafka, on_delivery positional (alo settings)"


def raw_confluent(bootstrap: str, records: Payloads, size: int, positional: bool = False) -> Result:
    """The peer: a bare confluent-kafka loop with the SDK at_least_once settings.

    ``positional``: a row for reference, not the target's peer. The peer passes ``on_delivery``
    by keyword, as confluent-kafka's documentation and examples do; the SDK passes it as the
    fifth positional argument (``sdk._client.positional_produce``), which spares
    confluent-kafka's argument parser a dict. This row shows what that alone is worth.
    """
    config = {**_profile(bootstrap, "at_least_once").render(), "partitioner": "murmur2_random"}
    name = topic(bootstrap)
    p = RawProducer(config)
    lat: list[float] = []
    errors = 0
    count = 0

    def on_delivery(err: Any, msg: Any) -> None:
        nonlocal errors, count
        count += 1
        if err is not None:
            errors += 1
        elif not count % SAMPLE:
            lat.append(time.time() * 1000 - msg.timestamp()[1])

    produce, poll = p.produce, p.poll
    p.list_topics(name, timeout=10)  # metadata warm, like the SDK's topic check
    start = time.perf_counter()
    if positional:  # a loop of its own: the peer's loop has no test per record
        for i, (key, value) in enumerate(records):
            while True:
                try:
                    produce(name, value, key, -1, on_delivery)
                    break
                except BufferError:
                    poll(0.01)
            if not i % 1000:
                poll(0)
    else:
        for i, (key, value) in enumerate(records):
            while True:
                try:
                    produce(name, value, key, on_delivery=on_delivery)
                    break
                except BufferError:
                    poll(0.01)
            if not i % 1000:
                poll(0)
    p.flush(300)
    seconds = time.perf_counter() - start
    p50, p99 = percentiles(lat)
    case = RAW_POSITIONAL if positional else "raw confluent-kafka (alo settings)"
    return Result(GROUP, case, size, len(records) - errors, seconds, p50, p99)


def sdk_producer(
    bootstrap: str, records: Payloads, size: int, guarantee: str, api: str = "send"
) -> Result:
    """The SDK Producer: ``send()`` per record (or ``send_many``), handles kept, then flush."""
    name = topic(bootstrap)
    lat: list[float] = []
    count = 0

    def on_delivery(handle: Any) -> None:
        nonlocal count
        count += 1
        if not count % SAMPLE and handle.exception() is None:
            lat.append(time.time() * 1000 - handle.result().timestamp_ms)

    producer = Producer(_profile(bootstrap, guarantee), on_delivery=on_delivery)
    eos = guarantee == "exactly_once"
    if eos:
        producer.begin_transaction()
    producer.send(name, b"warm-up").result(30)  # client + topic check outside the timing
    if eos:
        producer.commit_transaction(30)
    producer.flush(30)
    from sdk.producer import ProducerRecord

    prepared = [ProducerRecord(name, v, k) for k, v in records] if api != "send" else []
    start = time.perf_counter()
    if eos:
        producer.begin_transaction()
    if api != "send":  # inputs prepared outside the clock, like the raw loop's list
        if api == "send_many":
            producer.send_many(prepared)
        else:
            producer.send_batch(prepared)
    else:
        send, poll = producer.send, producer.poll
        for i, (key, value) in enumerate(records):
            send(name, value, key=key)  # fire and forget: failures surface at flush()
            if not i % 1000:
                poll(0)
    if eos:
        producer.commit_transaction(300)
    producer.flush(300)
    seconds = time.perf_counter() - start
    ok = producer.delivered - 1  # minus the warm-up record
    producer.close()
    p50, p99 = percentiles(lat)
    label = f"SDK {guarantee}" + ("" if api == "send" else f" {api}")
    if eos:
        label += " (one transaction)"
    return Result(GROUP, label, size, ok, seconds, p50, p99)


def kafka_python(bootstrap: str, records: Payloads, size: int) -> Result:
    """kafka-python's KafkaProducer with acks=all, idempotence, linger 5 ms."""
    from kafka import KafkaProducer

    name = topic(bootstrap)
    kwargs: dict[str, Any] = {
        "bootstrap_servers": bootstrap.split(","),
        "acks": "all",
        "linger_ms": 5,
        "batch_size": 1_000_000,
    }
    try:
        producer = KafkaProducer(enable_idempotence=True, **kwargs)
    except (TypeError, AssertionError, Exception):
        producer = KafkaProducer(**kwargs)
    lat: list[float] = []

    def sample(meta: Any) -> None:
        lat.append(time.time() * 1000 - meta.timestamp)

    producer.send(name, b"warm-up").get(30)
    start = time.perf_counter()
    for i, (key, value) in enumerate(records):
        future = producer.send(name, value=value, key=key)
        if not i % SAMPLE:
            future.add_callback(sample)
    producer.flush(600)
    seconds = time.perf_counter() - start
    producer.close()
    p50, p99 = percentiles(lat)
    return Result(GROUP, "kafka-python", size, len(records), seconds, p50, p99)


_PERF = re.compile(
    r"(\d+) records sent, ([\d.]+) records/sec .*?, ([\d.]+) ms avg latency, ([\d.]+) ms max "
    r"latency, (\d+) ms 50th, (\d+) ms 95th, (\d+) ms 99th"
)


def perf_test(bootstrap: str, n: int, size: int) -> Result:
    """Kafka's own ProducerPerformance from the broker jars (the JVM ceiling)."""
    name = topic(bootstrap)
    out = java_tool(
        "org.apache.kafka.tools.ProducerPerformance",
        "--topic",
        name,
        "--num-records",
        str(n),
        "--record-size",
        str(size),
        "--throughput",
        "-1",
        "--producer-props",
        f"bootstrap.servers={bootstrap}",
        "acks=all",
        "enable.idempotence=true",
        "linger.ms=5",
    )
    match = _PERF.findall(out)
    if not match:
        raise RuntimeError(f"unexpected ProducerPerformance output: {out[-500:]}")
    sent, rate, _avg, _max, p50, _p95, p99 = match[-1]
    return Result(
        GROUP,
        "kafka-producer-perf-test (Java)",
        size,
        int(sent),
        int(sent) / float(rate),
        float(p50),
        float(p99),
    )


def _case(name: str, bootstrap: str, n: int, size: int, args: tuple[Any, ...]) -> Result | None:
    from benchmarks._harness import payloads, with_own_cpu

    data = payloads(n, size)  # built in the child, outside the clock and the CPU count
    fn = {"raw": raw_confluent, "sdk": sdk_producer, "kafka-python": kafka_python}[name]
    return with_own_cpu(fn, bootstrap, data, size, *args)


def in_fresh_process(name: str, bootstrap: str, n: int, size: int, *args: Any) -> Result | None:
    """Run one producer case (``raw``, ``sdk`` or ``kafka-python``) in a new interpreter.

    See :func:`benchmarks._harness.in_fresh_process`. Measured: each case in a process of its
    own, ``send()`` ran at 1.07x (1 KB) and 1.04x (100 B) the raw loop; inside the runner's
    long-lived process, after dozens of cases, the two parted ways (0.63x-0.97x between full
    runs), and it was the peer's rate that moved. The records are built in the child, outside
    its CPU count.
    """
    from benchmarks._harness import in_fresh_process as fresh

    return fresh(_case, name, bootstrap, n, size, args)
