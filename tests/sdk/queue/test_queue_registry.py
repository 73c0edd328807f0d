"""The queue with Avro records through a real Apicurio registry and a real broker.

Decoded records reach the handler, a poison record is dead-lettered with its raw bytes and
rejected; a stop while the registry does not answer ends the run at once and the record waiting
on it is delivered again (never dead-lettered or rejected).
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from sdk.consumer import ConsumerRecord
from sdk.queue import QueueConsumer
from sdk.schemas import avro_deserializer
from sdk.testing.registry import SchemaRegistryServer
from tests.sdk.consumer._support import read_topic
from tests.sdk.queue._support import leftovers, queue_profile
from tests.sdk.schemas._front_ends import NOT_FRAMED, UNKNOWN_ID, cold_reader, seed_avro_with_poison

pytestmark = [pytest.mark.broker, pytest.mark.registry]


def test_avro_records_are_handled_and_poison_is_dead_lettered(
    kafka_cluster: Any, make_topic: Any, make_group: Any, schema_registry: str
) -> None:
    bs, topic, dlq, group = (
        kafka_cluster.bootstrap_servers,
        make_topic(1),
        make_topic(1),
        make_group(),
    )
    seed_avro_with_poison(bs, topic, schema_registry)
    prof = queue_profile(
        bs, "at_least_once", group, failure={"on_failure": "dlq", "dlq_topic": dlq}
    )
    seen: list[Any] = []
    deserializer = avro_deserializer(cold_reader(schema_registry))
    with QueueConsumer(prof, [topic], value_deserializer=deserializer) as queue:
        stats = queue.run(lambda r: seen.append(r.value), max_records=6, idle_timeout_s=30)
    assert sorted(v["id"] for v in seen) == [0, 1, 2, 3]
    assert (stats.deserialization_failures, stats.dead_lettered, stats.rejected) == (2, 2, 2)
    assert sorted(m.value() for m in read_topic(bs, dlq, 2)) == sorted([NOT_FRAMED, UNKNOWN_ID])
    assert leftovers(bs, group, topic, 3) == []


def test_a_stop_while_the_registry_is_down_returns_and_the_record_comes_back(
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
    seed_avro_with_poison(bs, topic, schema_registry)
    prof = queue_profile(
        bs, "at_least_once", group, failure={"on_failure": "dlq", "dlq_topic": dlq}
    )
    reader = cold_reader(schema_registry, registry_timeout_s=120)
    handled: list[ConsumerRecord] = []
    queue = QueueConsumer(prof, [topic], value_deserializer=avro_deserializer(reader))
    schema_registry_server.stop()
    try:
        timer = threading.Timer(8, queue.stop)
        timer.start()
        started = time.monotonic()
        stats = queue.run(handled.append, idle_timeout_s=60)
        took = time.monotonic() - started
    finally:
        timer.cancel()
        queue.close()
        schema_registry_server.start()
    assert took < 20  # the stop, not registry_timeout_s (120 s) nor the idle timeout
    assert stats.registry_retries >= 1
    assert (stats.handled, stats.dead_lettered, stats.rejected) == (0, 0, 0)
    # every record is still the group's to hand out (the waiting one released, not rejected)
    assert len(leftovers(bs, group, topic, 8)) == 6
