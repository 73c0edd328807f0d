"""Avro through a real Apicurio registry and a real broker: poison records and registry outages.

A record whose bytes do not fit is a poison record (dead-lettered with its raw bytes); a
registry that stops answering is not: the Consumer retries the same record, dead-letters
nothing, commits nothing past it, and goes on once the registry is back on the same port, or
stops with SchemaRegistryUnavailableError after ``registry_timeout_s``.
"""

from __future__ import annotations

import struct
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer as RawConsumer
from confluent_kafka import TopicPartition

from sdk.consumer import Consumer, ConsumerRecord
from sdk.errors import SchemaRegistryUnavailableError
from sdk.producer import Producer
from sdk.profiles import ProducerProfile
from sdk.schemas import SchemaRegistryConfig, avro_deserializer, avro_serializer
from sdk.testing.registry import SchemaRegistryServer
from tests.sdk.consumer._support import committed, profile, read_topic, seed, wait_for

pytestmark = [pytest.mark.broker, pytest.mark.registry]

V1 = """{"type": "record", "name": "Order", "namespace": "shop",
  "fields": [{"name": "id", "type": "long"}]}"""
V2 = """{"type": "record", "name": "Order", "namespace": "shop",
  "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": "string", "default": ""}]}"""
NOT_FRAMED = b"\x01abc"
UNKNOWN_ID = b"\x00" + struct.pack(">I", 987_654) + b"\x02"
FAST = {"backoff_initial_ms": 0, "backoff_max_ms": 0}


def _produce(bs: str, topic: str, config: SchemaRegistryConfig, schema: str, ids: range) -> None:
    prof = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bs)
    with Producer(
        prof, key_serializer="str", value_serializer=avro_serializer(config, schema)
    ) as p:
        for i in ids:
            p.send(topic, {"id": i}, key=str(i))
        p.flush(30)


def _end_offset(bs: str, topic: str) -> int:
    c = RawConsumer({"bootstrap.servers": bs, "group.id": "watermarks"})
    try:
        return int(c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)[1])
    finally:
        c.close()


def _run_in_thread(
    consumer: Consumer, handler: Callable[[ConsumerRecord], None], max_records: int
) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            consumer.run(handler, max_records=max_records)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, errors


def test_a_poison_record_is_dead_lettered_with_its_raw_bytes(
    kafka_cluster: Any, make_topic: Any, make_group: Any, schema_registry: str
) -> None:
    bs, topic, dlq, group = (
        kafka_cluster.bootstrap_servers,
        make_topic(1),
        make_topic(1),
        make_group(),
    )
    config = SchemaRegistryConfig(url=schema_registry)
    _produce(bs, topic, config, V1, range(2))
    # not in the wire format at all; a schema id the registry does not know
    seed(bs, topic, 2, values=[NOT_FRAMED, UNKNOWN_ID])
    _produce(bs, topic, config, V1, range(2, 4))
    prof = profile(
        bs, "at_least_once", group, failure={"on_failure": "dlq", "dlq_topic": dlq, **FAST}
    )
    seen: list[Any] = []
    with Consumer(prof, [topic], value_deserializer=avro_deserializer(config)) as consumer:
        stats = consumer.run(lambda r: seen.append(r.value), max_records=6)
    assert seen == [{"id": 0}, {"id": 1}, {"id": 2}, {"id": 3}]
    failures = (stats.deserialization_failures, stats.dead_lettered, stats.registry_retries)
    assert failures == (2, 2, 0)
    dead = read_topic(bs, dlq, 2)
    assert [d.value() for d in dead] == [NOT_FRAMED, UNKNOWN_ID]  # the raw bytes
    headers = [{k: (v or b"").decode() for k, v in d.headers() or []} for d in dead]
    assert [(h["dlq.stage"], h["dlq.offset"]) for h in headers] == [
        ("deserialize", "2"),
        ("deserialize", "3"),
    ]
    assert committed(bs, group, topic) == [6]


def test_a_registry_stopped_mid_run_is_waited_for_then_the_run_goes_on(
    kafka_cluster: Any,
    make_topic: Any,
    make_group: Any,
    schema_registry: str,
    schema_registry_server: SchemaRegistryServer,
) -> None:
    bs, topic, dlq, group = (
        kafka_cluster.bootstrap_servers,
        make_topic(1),
        make_topic(1),
        make_group(),
    )
    config = SchemaRegistryConfig(url=schema_registry)
    _produce(bs, topic, config, V1, range(5))
    _produce(bs, topic, config, V2, range(5, 10))  # a second schema id, unknown to the reader
    prof = profile(
        bs,
        "at_least_once",
        group,
        failure={"on_failure": "dlq", "dlq_topic": dlq, **FAST},
        extras={"auto.commit.interval.ms": 200},
    )
    registry_down = threading.Event()
    seen: list[int] = []

    def handler(record: ConsumerRecord) -> None:
        seen.append(record.value["id"])
        if record.offset == 4:  # the last v1 record: the v2 schema is not fetched yet
            registry_down.wait(30)

    # request_timeout_s: a config of its own, so a client of its own whose schema cache is
    # cold, as in a consumer process (clients are shared per config in a process)
    reader = SchemaRegistryConfig(url=schema_registry, registry_timeout_s=120, request_timeout_s=5)
    consumer = Consumer(prof, [topic], value_deserializer=avro_deserializer(reader))
    thread, errors = _run_in_thread(consumer, handler, 10)
    try:
        wait_for(lambda: len(seen) == 5, 30, "the v1 records handled")
        schema_registry_server.stop()
        registry_down.set()
        wait_for(lambda: consumer.stats.registry_retries >= 3, 30, "retries on the v2 record")
        time.sleep(1)  # several auto-commit intervals: nothing past the record may be committed
        assert seen == [0, 1, 2, 3, 4]
        assert consumer.stats.dead_lettered == consumer.stats.deserialization_failures == 0
        assert committed(bs, group, topic)[0] <= 5
        restarted = time.monotonic()
        schema_registry_server.start()  # the same port, the same schemas; returns once it answers
        answering = time.monotonic()
        thread.join(60)
        done = time.monotonic()
    finally:
        schema_registry_server.start()
        registry_down.set()
        consumer.stop()
        thread.join(30)
        consumer.close()
    assert not errors, errors
    assert seen == list(range(10))
    assert consumer.stats.dead_lettered == 0
    assert committed(bs, group, topic) == [10]
    assert _end_offset(bs, dlq) == 0
    print(
        f"registry restart took {answering - restarted:.1f}s; the run finished "
        f"{done - answering:.1f}s after the registry answered again"
    )


def test_a_registry_that_stays_down_stops_the_run_after_the_timeout(
    kafka_cluster: Any,
    make_topic: Any,
    make_group: Any,
    schema_registry: str,
    schema_registry_server: SchemaRegistryServer,
) -> None:
    bs, topic, dlq, group = (
        kafka_cluster.bootstrap_servers,
        make_topic(1),
        make_topic(1),
        make_group(),
    )
    _produce(bs, topic, SchemaRegistryConfig(url=schema_registry), V1, range(3))
    prof = profile(
        bs, "at_least_once", group, failure={"on_failure": "dlq", "dlq_topic": dlq, **FAST}
    )
    reader = SchemaRegistryConfig(url=schema_registry, registry_timeout_s=3, request_timeout_s=5)
    schema_registry_server.stop()
    try:
        started = time.monotonic()
        with (
            Consumer(prof, [topic], value_deserializer=avro_deserializer(reader)) as consumer,
            pytest.raises(SchemaRegistryUnavailableError) as info,
        ):
            consumer.run(lambda r: None, max_records=3)
        took = time.monotonic() - started
    finally:
        schema_registry_server.start()
    assert info.value.waited_s >= 3 and took < 30
    assert f"{topic}[0]@0" in str(info.value) and schema_registry in str(info.value)
    assert consumer.stats.registry_retries >= 2
    assert (consumer.stats.dead_lettered, consumer.stats.handled) == (0, 0)
    assert committed(bs, group, topic) == [-1001]
    assert _end_offset(bs, dlq) == 0
