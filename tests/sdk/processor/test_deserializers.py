"""The Processor's key and value deserializers, on a real broker (exactly_once).

A record that cannot be deserialized is a poison pill: with a dead-letter topic its raw bytes
go there as an output of the same transaction (``dlq.stage: deserialize``), and the records
around it are copied; with ``on_failure="stop"`` the run stops with a SerializationError, the
open transaction is aborted and no input offset moves past the poison pill.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from sdk.errors import SerializationError
from sdk.processor import OutputRecord, Processor
from tests.placement import java_partition, placement
from tests.sdk.processor._support import committed_total
from tests.sdk.processor.test_inprocess import eos_profile, run_until

pytestmark = pytest.mark.broker


def _seed(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for i, value in enumerate(values):
        producer.produce(topic, value=value, key=str(i).encode())
    assert producer.flush(30) == 0


def _read_committed(bootstrap: str, topic: str, expect: int, rounds: int = 100) -> list[Any]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe([topic])
    out: list[Any] = []
    try:
        for _ in range(rounds):
            out += [m for m in consumer.consume(100, 0.3) if m.error() is None]
            if len(out) >= expect:
                break
    finally:
        consumer.close()
    return out


def test_json_values_reach_the_handler_and_a_poison_pill_is_dead_lettered_in_the_transaction(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, dlq, group = make_topic(1), make_topic(1), make_topic(1), make_group()
    values = [json.dumps({"n": i}).encode() for i in range(20)]
    values[7] = b"{not json"
    _seed(bs, src, values)
    failure = {"on_failure": "dlq", "dlq_topic": dlq}
    seen: list[Any] = []

    def double(record: Any) -> list[OutputRecord]:
        seen.append(record.value)
        return [OutputRecord(dst, json.dumps({"n": record.value["n"] * 2}).encode(), record.key)]

    proc = Processor(
        eos_profile(bs, group, failure=failure),
        [src],
        instance_id="deser",
        value_deserializer="json",
    )
    box = run_until(proc, double, lambda: committed_total(bs, group, src, 1) >= 20)
    assert "error" not in box, box
    assert seen == [{"n": i} for i in range(20) if i != 7]  # dicts, in order, no poison
    out = _read_committed(bs, dst, 19)
    assert [json.loads(m.value())["n"] for m in out] == [2 * i for i in range(20) if i != 7]
    dead = _read_committed(bs, dlq, 1)
    assert [m.value() for m in dead] == [b"{not json"]  # the raw bytes
    headers = dict(dead[0].headers() or [])
    assert headers["dlq.stage"] == b"deserialize"
    assert proc.stats.deserialization_failures == 1 and proc.stats.dead_lettered == 1


def test_a_poison_pill_with_on_failure_stop_stops_the_run_and_commits_nothing_of_it(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(1), make_topic(1), make_group()
    _seed(bs, src, [b'"a"', b'"b"', b"\xff", b'"d"'])
    proc = Processor(
        eos_profile(bs, group, failure={"on_failure": "stop"}),
        [src],
        instance_id="deser-stop",
        value_deserializer="str",
    )

    def copy(record: Any) -> list[OutputRecord]:
        return [OutputRecord(dst, record.value.encode(), record.key)]

    box = run_until(proc, copy, lambda: False, timeout=30)
    assert isinstance(box.get("error"), SerializationError), box
    assert proc.stats.deserialization_failures == 1
    assert proc.stats.aborts >= 1  # the transaction open at the poison pill was aborted
    # what was committed before it (an earlier transaction) is a prefix of the records before
    # the poison pill; nothing after it is visible, and no input offset moved past it
    out = [m.value() for m in _read_committed(bs, dst, 3, rounds=15)]
    assert out in ([], [b'"a"'], [b'"a"', b'"b"']), out
    assert committed_total(bs, group, src, 1) <= 2


def test_keyed_outputs_are_placed_by_murmur2_over_the_serialized_key(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    """``key_serializer``: the partition is Java's murmur2 of the key's *bytes* (JSON here),
    read back by kafka-python (tests/placement.py), as a Java producer would place them."""
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(1), make_topic(6), make_group()
    _seed(bs, src, [json.dumps({"customer": f"c{i % 40}"}).encode() for i in range(80)])
    proc = Processor(
        eos_profile(bs, group),
        [src],
        instance_id="keyed",
        value_deserializer="json",
        key_serializer="json",  # {"id": "c7"} -> b'{"id": "c7"}'
        value_serializer="json",
    )

    def keyed(record: Any) -> list[OutputRecord]:
        customer = record.value["customer"]
        return [OutputRecord(dst, {"customer": customer}, key={"id": customer})]

    box = run_until(proc, keyed, lambda: committed_total(bs, group, src, 1) >= 80)
    assert "error" not in box, box
    seen = placement(bs, dst, 80)
    assert len(seen) == 40
    for key, partitions in seen.items():
        assert json.loads(key)["id"].startswith("c")
        assert partitions == {java_partition(key, 6)}, (key, partitions)
