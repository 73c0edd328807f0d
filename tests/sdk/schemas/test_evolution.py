"""Schema evolution under SIGKILLs: producers move from v1 to v2 mid-run, nothing lost or doubled.

Producers write ``Order`` records to the input, the first half with schema v1 and the second
half with v2 (a field added with a default: BACKWARD-compatible, the level the test sets on
the subject). Two exactly_once Processor processes (``tests.sdk.processor.worker`` with a
registry) read them as Avro and write ``Shipped`` records (Avro, v2 with the same optional
field) while the test SIGKILLs them three times and restarts them. A reader still on v1 of each
schema (reader schemas without the field) reads both topics: every id exactly once in the
output (read_committed, kafka-python), every input readable. Then v3 (a field without a
default and a changed type) is refused with an error naming the subject, the level and the
fields.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KTopicPartition

from sdk.errors import SerializationError
from sdk.producer import Producer
from sdk.profiles import ProducerProfile
from sdk.schemas import SchemaRegistryConfig, avro_deserializer, avro_serializer
from sdk.schemas._config import registry_client
from sdk.serialization import MessageField, SerializationContext
from sdk.testing.pytest_plugin import require_local
from tests.sdk.processor._support import Worker, committed_total, wait_for
from tests.sdk.schemas.test_registry_consumer import V1, V2

pytestmark = [pytest.mark.broker, pytest.mark.registry, pytest.mark.slow]

N = 3_000
PARTS = 2
V3 = """{"type": "record", "name": "Order", "namespace": "shop",
  "fields": [{"name": "id", "type": "string"}, {"name": "note", "type": "string", "default": ""},
             {"name": "qty", "type": "int"}]}"""
OUT_V1 = """{"type": "record", "name": "Shipped", "namespace": "shop",
  "fields": [{"name": "id", "type": "long"}]}"""
OUT_V2 = """{"type": "record", "name": "Shipped", "namespace": "shop",
  "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": "string", "default": ""}]}"""


def _send(bs: str, topic: str, config: SchemaRegistryConfig, schema: str, ids: range) -> None:
    prof = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bs)
    with Producer(
        prof, key_serializer="str", value_serializer=avro_serializer(config, schema)
    ) as producer:
        for i in ids:
            value = {"id": i} if schema == V1 else {"id": i, "note": f"n{i}"}
            producer.send(topic, value, key=str(i))
            if i % 250 == 249:
                producer.flush(30)
                time.sleep(0.3)  # the switch to v2 lands while the processors run
        producer.flush(30)


def _read(bs: str, topic: str, expect: int, committed_only: bool) -> list[bytes]:
    """Every value of ``topic`` (all partitions), read by kafka-python."""
    reader = KafkaConsumer(
        bootstrap_servers=bs,
        isolation_level="read_committed" if committed_only else "read_uncommitted",
        enable_auto_commit=False,
    )
    tps = [KTopicPartition(topic, p) for p in range(PARTS)]
    try:
        reader.assign(tps)
        reader.seek_to_beginning(*tps)
        ends = reader.end_offsets(tps)
        out: list[bytes] = []
        deadline = time.monotonic() + 120
        while any(reader.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, f"read {len(out)} of {topic}, ends {ends}"
            for records in reader.poll(timeout_ms=500, max_records=5_000).values():
                out += [r.value for r in records]
        return out
    finally:
        reader.close()


def test_v1_to_v2_mid_run_under_kills_then_an_incompatible_v3_is_refused(
    kafka_cluster: Any, make_topic: Any, make_group: Any, schema_registry: str, tmp_path: Path
) -> None:
    bs = require_local(kafka_cluster).bootstrap_servers
    src, dst, group = make_topic(PARTS), make_topic(PARTS), make_group()
    config = SchemaRegistryConfig(url=schema_registry)
    client = registry_client(config)
    _send(bs, src, config, V1, range(0, 500))  # registers <src>-value v1
    client.set_compatibility(f"{src}-value", "BACKWARD")
    producing = threading.Thread(
        target=lambda: (
            _send(bs, src, config, V1, range(500, N // 2)),
            _send(bs, src, config, V2, range(N // 2, N)),  # v2 mid-run
        ),
        daemon=True,
    )
    producing.start()
    base = {
        "bootstrap": bs,
        "group": group,
        "input": src,
        "output": dst,
        "guarantee": "exactly_once",
        "txn_prefix": f"{group}-",
        # 100 records per 0.5 s and worker: the kills land while records are in flight
        "delay_per_100": 0.5,
        "registry": schema_registry,
        "out_schema": OUT_V2,
    }
    workers: dict[str, Worker] = {}
    started: list[Worker] = []

    def start(name: str) -> None:
        workers[name] = Worker(tmp_path, name, **base)
        started.append(workers[name])

    def progress() -> int:
        return committed_total(bs, group, src, PARTS)

    at_kill: list[int] = []
    try:
        start("a")
        start("b")
        for victim, frac in (("a", 0.25), ("b", 0.5), ("a", 0.75)):
            at_kill.append(
                wait_for(lambda f=frac: (p := progress()) >= f * N and p, 240, f"{frac:.0%}")
            )
            workers[victim].kill()  # the committed progress read just before
            print(f"SIGKILL {victim} at {at_kill[-1]}/{N} committed")
            start(victim)
        producing.join(120)
        wait_for(lambda: progress() >= N, 240, "all input committed")
    finally:
        for w in started:
            w.terminate()
    assert len(at_kill) == 3 and all(p < N for p in at_kill), at_kill  # all mid-run
    assert not producing.is_alive()
    # a consumer still on v1 of both schemas reads everything
    out_reader = avro_deserializer(config, OUT_V1)
    out_ctx = SerializationContext(dst, MessageField.VALUE)
    ids = [out_reader(v, out_ctx)["id"] for v in _read(bs, dst, N, committed_only=True)]
    assert len(ids) == N and sorted(ids) == list(range(N))  # 0 lost, 0 duplicated
    in_reader = avro_deserializer(config, V1)
    in_ctx = SerializationContext(src, MessageField.VALUE)
    inputs = [in_reader(v, in_ctx) for v in _read(bs, src, N, committed_only=False)]
    assert sorted(r["id"] for r in inputs) == list(range(N))
    assert all(set(r) == {"id"} for r in inputs)  # v2's field dropped for the v1 reader
    versions = client.get_versions(f"{src}-value")
    assert len(versions) == 2  # v1 and v2
    # v3: a field without a default, a changed type: refused, named
    with (
        Producer(
            ProducerProfile(guarantee="at_least_once", bootstrap_servers=bs),
            value_serializer=avro_serializer(config, V3),
        ) as producer,
        pytest.raises(SerializationError) as info,
    ):
        producer.send(src, {"id": "x", "note": "", "qty": 1})
    text = str(info.value)
    print(f"v3 refused: {text}")
    assert f"subject '{src}-value'" in text
    assert "compatibility level BACKWARD" in text
    assert "'qty' was added without a default" in text
    assert "'id' changed type" in text
    assert len(client.get_versions(f"{src}-value")) == 2  # nothing registered
