"""A schema registry stopped for 20 s in the middle of a run, per guarantee: nothing lost.

at_least_once (the Consumer) and exactly_once (the Processor, Avro in and Avro out): 100 records
of schema v1, then 100 of v2, whose schema id the reader has not fetched yet. The registry is
stopped (its process ended; port and storage kept) while the last v1 record is handled and
started again 20 s later. The run must wait on the first v2 record (nothing dead-lettered,
nothing committed past it), then finish every record once the registry answers. What was
written is counted by kafka-python, not by the SDK. Recovery time = from the restarted registry
answering to the first v2 record handled (the wait's backoff caps each sleep at 5 s).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition

from sdk.consumer import Consumer, ConsumerRecord
from sdk.processor import OutputRecord, Processor
from sdk.schemas import SchemaRegistryConfig, avro_deserializer, avro_serializer
from sdk.serialization import MessageField, SerializationContext
from sdk.testing.registry import SchemaRegistryServer
from tests.sdk.consumer._support import committed, profile, wait_for
from tests.sdk.processor.test_inprocess import eos_profile
from tests.sdk.schemas.test_registry_consumer import V1, V2, _produce

pytestmark = [pytest.mark.broker, pytest.mark.registry, pytest.mark.slow]

OUTAGE_S = 20.0
N = 100  # records per schema version
OUT = """{"type": "record", "name": "Shipped", "namespace": "shop",
  "fields": [{"name": "order", "type": "long"}]}"""
FAST = {"backoff_initial_ms": 0, "backoff_max_ms": 0}


def _end_offset(bs: str, topic: str) -> int:
    reader = KafkaConsumer(bootstrap_servers=bs)
    try:
        tp = KTopicPartition(topic, 0)
        return int(reader.end_offsets([tp])[tp])
    finally:
        reader.close()


def _read_committed_values(bs: str, topic: str, expect: int) -> list[bytes]:
    """Every committed record's value of partition 0, read by kafka-python (read_committed)."""
    reader = KafkaConsumer(
        bootstrap_servers=bs,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    tp = KTopicPartition(topic, 0)
    try:
        reader.assign([tp])
        reader.seek_to_beginning(tp)
        out: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(out) < expect and time.monotonic() < deadline:
            for records in reader.poll(timeout_ms=500).values():
                out += [r.value for r in records]
        # anything beyond what was expected is a duplicate: read on for a moment
        for records in reader.poll(timeout_ms=1_000).values():
            out += [r.value for r in records]
        return out
    finally:
        reader.close()


class Outage:
    """Stops the registry when the last v1 record is handled; starts it OUTAGE_S later."""

    def __init__(self, server: SchemaRegistryServer) -> None:
        self.server = server
        self.down = threading.Event()
        self.stopped_at = self.answering_at = self.first_v2_at = 0.0

    def handled(self, order_id: int) -> None:
        """Called by the handler with each record's id, in the handler's thread."""
        if order_id == N - 1 and not self.down.is_set():
            self.server.stop()
            self.stopped_at = time.monotonic()
            self.down.set()
        elif order_id == N and not self.first_v2_at:
            self.first_v2_at = time.monotonic()

    def waiting(self, stats: Any) -> None:
        """Return once the registry is down and the run retries the first v2 record."""
        assert self.down.wait(60), "the last v1 record was never handled"
        wait_for(lambda: stats.registry_retries >= 1, 30, "a retry on the first v2 record")

    def restart(self) -> None:
        """Start the registry OUTAGE_S after it stopped (same port and schemas)."""
        time.sleep(max(0.0, self.stopped_at + OUTAGE_S - time.monotonic()))
        self.server.start()  # returns once it answers
        self.answering_at = time.monotonic()

    @property
    def recovery_s(self) -> float:
        return self.first_v2_at - self.answering_at


def _reader_config(url: str) -> SchemaRegistryConfig:
    # request_timeout_s: a config of its own, so a client of its own whose schema cache is
    # cold, as in a consumer process (clients are shared per config in a process)
    return SchemaRegistryConfig(url=url, registry_timeout_s=120, request_timeout_s=4)


def test_at_least_once_consumer_waits_out_a_20s_outage(
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
    writer = SchemaRegistryConfig(url=schema_registry)
    _produce(bs, topic, writer, V1, range(N))
    _produce(bs, topic, writer, V2, range(N, 2 * N))
    prof = profile(
        bs,
        "at_least_once",
        group,
        failure={"on_failure": "dlq", "dlq_topic": dlq, **FAST},
        extras={"auto.commit.interval.ms": 200},
    )
    outage = Outage(schema_registry_server)
    seen: list[int] = []

    def handler(record: ConsumerRecord) -> None:
        seen.append(record.value["id"])
        outage.handled(record.value["id"])

    consumer = Consumer(
        prof, [topic], value_deserializer=avro_deserializer(_reader_config(schema_registry))
    )
    errors: list[BaseException] = []

    def run() -> None:
        try:
            consumer.run(handler, max_records=2 * N)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        outage.waiting(consumer.stats)
        time.sleep(1)  # several auto-commit intervals into the outage
        assert seen == list(range(N))  # the first v2 record is waited on, not skipped
        assert consumer.stats.dead_lettered == 0
        assert committed(bs, group, topic)[0] <= N  # nothing past it committed
        outage.restart()
        thread.join(60)
    finally:
        schema_registry_server.start()
        consumer.stop()
        thread.join(30)
        consumer.close()
    assert not errors, errors
    assert sorted(set(seen)) == list(range(2 * N))  # nothing lost
    assert consumer.stats.dead_lettered == consumer.stats.deserialization_failures == 0
    assert committed(bs, group, topic) == [2 * N]
    assert _end_offset(bs, dlq) == 0
    assert 0 <= outage.recovery_s < 15, outage.recovery_s
    print(
        f"at_least_once: {consumer.stats.registry_retries} registry retries; the first v2 "
        f"record handled {outage.recovery_s:.1f}s after the registry answered again"
    )


def test_exactly_once_processor_waits_out_a_20s_outage(
    kafka_cluster: Any,
    make_topic: Any,
    make_group: Any,
    schema_registry: str,
    schema_registry_server: SchemaRegistryServer,
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, dlq, group = make_topic(1), make_topic(1), make_topic(1), make_group()
    writer = SchemaRegistryConfig(url=schema_registry)
    _produce(bs, src, writer, V1, range(N))
    _produce(bs, src, writer, V2, range(N, 2 * N))
    reader = _reader_config(schema_registry)
    prof = eos_profile(bs, group, failure={"on_failure": "dlq", "dlq_topic": dlq, **FAST})
    outage = Outage(schema_registry_server)

    def handler(record: ConsumerRecord) -> list[OutputRecord]:
        outage.handled(record.value["id"])
        return [OutputRecord(dst, {"order": record.value["id"]}, key=record.key)]

    proc = Processor(
        prof,
        [src],
        instance_id="outage-0",
        value_deserializer=avro_deserializer(reader),
        value_serializer=avro_serializer(reader, OUT),
    )
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["stats"] = proc.run(handler)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        outage.waiting(proc.stats)
        time.sleep(1)
        assert proc.stats.dead_lettered == 0
        assert committed(bs, group, src)[0] <= N  # no transaction past the waiting record
        outage.restart()
        wait_for(lambda: committed(bs, group, src) == [2 * N], 60, "every input committed")
    finally:
        schema_registry_server.start()
        proc.stop()
        thread.join(60)
    assert "error" not in box, box.get("error")
    stats = box["stats"]
    assert (stats.dead_lettered, stats.deserialization_failures) == (0, 0)
    assert stats.registry_retries >= 1
    decode = avro_deserializer(SchemaRegistryConfig(url=schema_registry))
    values = _read_committed_values(bs, dst, 2 * N)
    ctx = SerializationContext(dst, MessageField.VALUE)
    orders = [decode(v, ctx)["order"] for v in values]
    assert sorted(orders) == list(range(2 * N))  # each once: nothing lost, nothing duplicated
    assert _end_offset(bs, dlq) == 0
    assert 0 <= outage.recovery_s < 15, outage.recovery_s
    print(
        f"exactly_once: {stats.registry_retries} registry retries, {stats.aborts} aborts; the "
        f"first v2 record handled {outage.recovery_s:.1f}s after the registry answered again"
    )
