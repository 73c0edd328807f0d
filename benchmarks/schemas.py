"""Benchmark (issue #49): Avro through a schema registry, the SDK against a hand-written loop.

1 KB records (``--size``): an Avro ``Order`` of an id, a key and a string that makes up the
size, written with a registry serializer. Four cases, each with confluent-kafka's own
``AvroSerializer``/``AvroDeserializer`` against the same registry, so the ratio compares the
loops around the same serializer:

* ``send``: the SDK ``Producer(value_serializer=sdk.schemas.avro_serializer(...)).send()``
  (at_least_once) against a raw confluent-kafka ``Producer`` loop that calls
  ``AvroSerializer(obj, SerializationContext(topic, VALUE))`` and ``produce()`` with the same
  librdkafka settings (the SDK's at_least_once profile rendered), both serving delivery
  reports with ``poll(0)`` every 1,000 records (as ``benchmarks.run``'s send cases), until
  ``flush()``;
* ``consume``: the SDK ``Consumer(value_deserializer=avro_deserializer(...)).run(handler)``
  (at_least_once) against a raw ``consume()`` loop that deserializes each value with
  ``AvroDeserializer``, calls the same handler and stores the batch's offsets after it.

Each case gets a fresh topic (send) or group (consume); the rate is records over the case's
clock, CPU per record is this process's CPU over the case (every thread). Medians over
``--runs``; within a run the SDK and the peer go back to back, in alternating order. The
registry's schema lookups are cached by both after the first record, as in a service.
Usage::

    .venv/bin/python -m benchmarks.schemas             # starts a 1-node cluster and Apicurio
    .venv/bin/python -m benchmarks.schemas --bootstrap 127.0.0.1:9092 --registry URL --runs 1
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer as RawConsumer
from confluent_kafka import Producer as RawProducer
from confluent_kafka import TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from benchmarks._harness import (
    broker,
    cpu_mark,
    cpu_per_record,
    progress,
    raw_consumer_config,
    sdk_consumer_fields,
    topic,
)
from sdk.consumer import Consumer, ConsumerRecord
from sdk.producer import Producer
from sdk.profiles import ConsumerProfile, ProducerProfile
from sdk.schemas import SchemaRegistryConfig, avro_deserializer, avro_serializer

SCHEMA = """{"type": "record", "name": "Order", "namespace": "bench",
  "fields": [{"name": "id", "type": "long"}, {"name": "customer", "type": "string"},
             {"name": "payload", "type": "string"}]}"""


@dataclass(frozen=True)
class Sample:
    """One case's measurement."""

    records: int
    seconds: float
    cpu_us: float

    @property
    def rate(self) -> float:
        """Records per second."""
        return self.records / self.seconds


def orders(n: int, size: int) -> list[tuple[str, dict[str, Any]]]:
    """``n`` (key, Order) pairs whose Avro encoding is about ``size`` bytes."""
    pad = "x" * max(0, size - 24)
    return [
        (f"c{i % 1000}", {"id": i, "customer": f"c{i % 1000}", "payload": pad}) for i in range(n)
    ]


def _producer_config(bootstrap: str) -> dict[str, Any]:
    return dict(
        ProducerProfile(
            guarantee="at_least_once", bootstrap_servers=bootstrap, linger_ms=5
        ).render()
    )


def _measured(fn: Callable[[], tuple[int, float]]) -> Sample:
    before = cpu_mark()
    records, seconds = fn()
    after = cpu_mark()
    return Sample(records, seconds, cpu_per_record(before, after, records)["client_cpu_us"])


# ---------------------------------------------------------------------- send
def raw_send(bootstrap: str, url: str, data: list[tuple[str, dict[str, Any]]]) -> Sample:
    """The peer: confluent-kafka's AvroSerializer and produce() in a loop, then flush()."""
    name = topic(bootstrap)
    serializer = AvroSerializer(SchemaRegistryClient({"url": url}), SCHEMA)
    producer = RawProducer(_producer_config(bootstrap))
    ctx = SerializationContext(name, MessageField.VALUE)
    errors = 0

    def on_delivery(err: Any, msg: Any) -> None:
        nonlocal errors
        if err is not None:
            errors += 1

    def run() -> tuple[int, float]:
        produce, poll = producer.produce, producer.poll
        producer.list_topics(name, timeout=10)
        start = time.perf_counter()
        for i, (key, value) in enumerate(data):
            payload = serializer(value, ctx)
            while True:
                try:
                    produce(name, payload, key.encode(), on_delivery=on_delivery)
                    break
                except BufferError:
                    poll(0.01)
            if not i % 1000:
                poll(0)
        assert producer.flush(120) == 0 and errors == 0
        return len(data), time.perf_counter() - start

    return _measured(run)


def sdk_send(bootstrap: str, url: str, data: list[tuple[str, dict[str, Any]]]) -> Sample:
    """The SDK Producer with ``value_serializer=avro_serializer(...)``, then flush()."""
    name = topic(bootstrap)
    config = SchemaRegistryConfig(url=url)
    prof = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bootstrap, linger_ms=5)

    def run() -> tuple[int, float]:
        with Producer(
            prof, key_serializer="str", value_serializer=avro_serializer(config, SCHEMA)
        ) as producer:
            send, poll = producer.send, producer.poll
            start = time.perf_counter()
            for i, (key, value) in enumerate(data):
                send(name, value, key=key)
                if not i % 1000:  # serve delivery reports as the peer does
                    poll(0)
            producer.flush(120)
            return len(data), time.perf_counter() - start

    return _measured(run)


# ---------------------------------------------------------------------- consume
def handler(value: Any) -> None:
    """The per-record work of both consume cases."""
    _ = value["id"]


def raw_consume(bootstrap: str, url: str, name: str, n: int) -> Sample:
    """The peer: consume() batches, AvroDeserializer per value, the handler, store offsets."""
    deserializer = AvroDeserializer(SchemaRegistryClient({"url": url}))
    profile = ConsumerProfile(
        guarantee="at_least_once", bootstrap_servers=bootstrap, group_id=_group()
    )
    consumer = RawConsumer(raw_consumer_config(dict(profile.render())))
    ctx = SerializationContext(name, MessageField.VALUE)

    def run() -> tuple[int, float]:
        consumer.subscribe([name])
        seen, first = 0, 0.0
        while seen < n:
            msgs = consumer.consume(500, 1.0)
            if not msgs:
                continue
            if not first:
                first = time.perf_counter()
            last: dict[tuple[str, int], int] = {}
            for m in msgs:
                if m.error() is None:
                    handler(deserializer(m.value(), ctx))
                    seen += 1
                    last[(m.topic(), m.partition())] = m.offset()
            consumer.store_offsets(
                offsets=[TopicPartition(t, p, o + 1) for (t, p), o in last.items()]
            )
        consumer.commit(asynchronous=False)
        return seen, time.perf_counter() - first

    try:
        return _measured(run)
    finally:
        consumer.close()


def sdk_consume(bootstrap: str, url: str, name: str, n: int) -> Sample:
    """The SDK Consumer with ``value_deserializer=avro_deserializer(...)``: ``run(handler)``."""
    profile = ConsumerProfile(
        guarantee="at_least_once",
        bootstrap_servers=bootstrap,
        group_id=_group(),
        **sdk_consumer_fields(),
    )
    config = SchemaRegistryConfig(url=url)
    first = 0.0

    def one(record: ConsumerRecord) -> None:
        nonlocal first
        if not first:
            first = time.perf_counter()
        handler(record.value)

    def run() -> tuple[int, float]:
        with Consumer(profile, [name], value_deserializer=avro_deserializer(config)) as c:
            stats = c.run(one, max_records=n)
            return stats.handled, time.perf_counter() - first

    return _measured(run)


def _group() -> str:
    return f"bench-{uuid.uuid4().hex[:8]}"


# ---------------------------------------------------------------------- the run
@contextlib.contextmanager
def registry(url: str | None) -> Iterator[str]:
    """Yield a registry URL: the given one or an embedded Apicurio."""
    if url:
        yield url
        return
    from sdk.testing.registry import SchemaRegistryServer

    with SchemaRegistryServer() as server:
        yield server.url


def run(bootstrap: str, url: str, args: argparse.Namespace) -> str:
    """Every case ``args.runs`` times; the Markdown table of the medians."""
    data = orders(args.records, args.size)
    source = _fill(bootstrap, url, data)  # registers the schema too
    encoded = len(
        AvroSerializer(SchemaRegistryClient({"url": url}), SCHEMA)(
            data[0][1], SerializationContext(source, MessageField.VALUE)
        )
    )
    progress(f"{source}: {args.records} Avro records of {encoded} bytes")
    pairs: dict[str, tuple[Callable[[], Sample], Callable[[], Sample]]] = {
        "send": (lambda: sdk_send(bootstrap, url, data), lambda: raw_send(bootstrap, url, data)),
        "consume": (
            lambda: sdk_consume(bootstrap, url, source, args.records),
            lambda: raw_consume(bootstrap, url, source, args.records),
        ),
    }
    samples: dict[tuple[str, str], list[Sample]] = {}
    for r in range(args.runs):
        for case, (ours, peer) in pairs.items():
            order = [("SDK", ours), ("peer", peer)]
            if r % 2:
                order.reverse()
            for who, fn in order:
                progress(f"run {r + 1}/{args.runs}: {case} {who}")
                sample = fn()
                samples.setdefault((case, who), []).append(sample)
                progress(f"    {sample.rate:,.0f} records/s, {sample.cpu_us:.1f} µs CPU/record")
    lines = [
        f"{args.records:,} records of {encoded} bytes (Avro), medians of {args.runs}",
        "",
        "| case | SDK records/s | peer records/s | SDK/peer | SDK µs CPU/record "
        "| peer µs CPU/record |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for case in pairs:
        ours = samples[(case, "SDK")]
        peer = samples[(case, "peer")]
        rate_o = statistics.median(s.rate for s in ours)
        rate_p = statistics.median(s.rate for s in peer)
        cpu_o = statistics.median(s.cpu_us for s in ours)
        cpu_p = statistics.median(s.cpu_us for s in peer)
        lines.append(
            f"| {case} | {rate_o:,.0f} | {rate_p:,.0f} | {rate_o / rate_p:.2f} | "
            f"{cpu_o:.1f} | {cpu_p:.1f} |"
        )
    return "\n".join(lines)


def _fill(bootstrap: str, url: str, data: list[tuple[str, dict[str, Any]]]) -> str:
    """A topic holding ``data`` as Avro (written by the SDK Producer)."""
    name = topic(bootstrap)
    config = SchemaRegistryConfig(url=url)
    prof = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bootstrap, linger_ms=20)
    with Producer(
        prof, key_serializer="str", value_serializer=avro_serializer(config, SCHEMA)
    ) as producer:
        for key, value in data:
            producer.send(name, value, key=key)
        producer.flush(120)
    return name


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, start a cluster and a registry if none was given, print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--bootstrap", help="existing broker (default: start a local one)")
    parser.add_argument("--registry", help="existing registry URL (default: start Apicurio)")
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1024, help="Avro record size, bytes")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    if args.records < 1 or args.runs < 1:
        parser.error("--records and --runs must be >= 1")
    with broker(args.bootstrap) as bootstrap, registry(args.registry) as url:
        out = run(bootstrap, url, args)
    print()
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
