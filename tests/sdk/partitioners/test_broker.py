"""Partitioners against a real broker: Python placement == librdkafka's, runtime partitions."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewPartitions

from sdk.partitioners import PartitionRouter, StickyPartitioner, resolve_partitioner
from sdk.partitioners._python import RoundRobinPartitioner
from sdk.producer import Producer as SdkProducer
from sdk.profiles import load_profiles

pytestmark = pytest.mark.broker

RECORDS = 1000


def _value(msg: Message) -> bytes:
    value = msg.value()
    assert isinstance(value, bytes)
    return value


def _partition(msg: Message) -> int:
    partition = msg.partition()
    assert partition is not None
    return partition


def _read_back(bootstrap: str, topic: str, partitions: int) -> dict[bytes, int]:
    """Return value -> partition for every record of ``topic`` (values are unique)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1]
            for p in range(partitions)
        }
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        placed: dict[bytes, int] = {}
        left = sum(ends.values())
        deadline = time.monotonic() + 60
        while left and time.monotonic() < deadline:
            for msg in consumer.consume(500, 1.0):
                if msg.error():
                    continue
                placed[_value(msg)] = _partition(msg)
                left -= 1
        assert left == 0, f"{left} records of {topic} not read back"
        return placed
    finally:
        consumer.close()


def _delivery_collector() -> tuple[dict[bytes, int], Callable[[KafkaError | None, Message], None]]:
    delivered: dict[bytes, int] = {}

    def on_delivery(err: KafkaError | None, msg: Message) -> None:
        assert err is None, err
        delivered[_value(msg)] = _partition(msg)

    return delivered, on_delivery


@pytest.mark.parametrize("name", ["murmur2", "fnv1a", "consistent", "consistent_random"])
def test_python_hash_equals_native_placement(
    name: str, kafka_cluster: Any, make_topic: Callable[..., str]
) -> None:
    partitions = 6
    topic = make_topic(partitions)
    partitioner = resolve_partitioner(name)
    assert partitioner.native_name is not None
    producer = Producer(
        {
            "bootstrap.servers": kafka_cluster.bootstrap_servers,
            "linger.ms": 20,
            "partitioner": partitioner.native_name,
        }
    )
    keys: dict[bytes, bytes | None] = {str(i).encode(): f"key-{i}".encode() for i in range(RECORDS)}
    if name != "consistent_random":  # b"" is hashed by these; consistent hashes None too
        keys[b"empty-1"] = b""
        keys[b"empty-2"] = b""
    if name == "consistent":
        keys[b"null-1"] = None
        keys[b"null-2"] = None
    delivered, on_delivery = _delivery_collector()
    for value, key in keys.items():
        producer.produce(topic, value, key=key, on_delivery=on_delivery)
    assert producer.flush(30) == 0
    placed = _read_back(kafka_cluster.bootstrap_servers, topic, partitions)
    assert placed == delivered
    assert len(placed) == len(keys)
    tp = partitioner.for_topic(topic)
    expected = {value: tp.partition(key, value, partitions) for value, key in keys.items()}
    mismatches = {v: (placed[v], expected[v]) for v in keys if placed[v] != expected[v]}
    assert not mismatches
    assert len(set(placed.values())) == partitions  # a real spread, not one partition


def test_random_native_spreads_keyed_records(
    kafka_cluster: Any, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(6)
    producer = Producer(
        {"bootstrap.servers": kafka_cluster.bootstrap_servers, "partitioner": "random"}
    )
    for i in range(300):
        producer.produce(topic, str(i).encode(), key=b"same-key")
    assert producer.flush(30) == 0
    placed = _read_back(kafka_cluster.bootstrap_servers, topic, 6)
    assert len(placed) == 300
    assert len(set(placed.values())) == 6  # the same key went everywhere: keys are ignored


def _router_producer(
    bootstrap: str, partitioner: Any, **router_args: Any
) -> tuple[PartitionRouter, Producer]:
    router = PartitionRouter(partitioner, {"bootstrap.servers": bootstrap}, **router_args)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 5, **router.producer_config()}
    )
    router.attach(producer)
    return router, producer


def _produce(
    router: PartitionRouter,
    producer: Producer,
    topic: str,
    values: list[bytes],
    key: bytes | None = None,
) -> None:
    for value in values:
        partition = router.route(topic, key, value)
        assert partition is not None
        producer.produce(topic, value, key=key, partition=partition)
    assert producer.flush(30) == 0


def test_round_robin_is_even_on_a_real_topic(
    kafka_cluster: Any, make_topic: Callable[..., str]
) -> None:
    partitions = 7
    topic = make_topic(partitions)
    router, producer = _router_producer(kafka_cluster.bootstrap_servers, RoundRobinPartitioner())
    _produce(router, producer, topic, [str(i).encode() for i in range(RECORDS)], key=b"k")
    placed = _read_back(kafka_cluster.bootstrap_servers, topic, partitions)
    counts = Counter(placed.values())
    assert sum(counts.values()) == RECORDS
    assert max(counts.values()) - min(counts.values()) <= 1
    assert len(counts) == partitions


def test_sticky_switches_partition_per_batch(
    kafka_cluster: Any, make_topic: Callable[..., str]
) -> None:
    partitions = 4
    topic = make_topic(partitions)
    # size-based: 10 records of 100 bytes fill a 1000-byte batch (KIP-794)
    router, producer = _router_producer(
        kafka_cluster.bootstrap_servers, StickyPartitioner(batch_bytes=1000)
    )
    values = [f"{i:03d}".encode().ljust(100, b".") for i in range(200)]
    _produce(router, producer, topic, values)
    placed = _read_back(kafka_cluster.bootstrap_servers, topic, partitions)
    batches = [[placed[v] for v in values[i : i + 10]] for i in range(0, 200, 10)]
    assert all(len(set(batch)) == 1 for batch in batches)
    assert all(a[0] != b[0] for a, b in itertools.pairwise(batches))

    # send-based: every flush() sends the batch; on_batch_sent moves to another partition
    topic2 = make_topic(partitions)
    router2, producer2 = _router_producer(
        kafka_cluster.bootstrap_servers, StickyPartitioner(batch_bytes=10**9)
    )
    groups = [[f"{g}-{i}".encode() for i in range(15)] for g in range(6)]
    for group in groups:
        _produce(router2, producer2, topic2, group)
        router2.on_batch_sent(topic2)
    placed2 = _read_back(kafka_cluster.bootstrap_servers, topic2, partitions)
    per_group = [{placed2[v] for v in group} for group in groups]
    assert all(len(s) == 1 for s in per_group)
    assert all(a != b for a, b in itertools.pairwise(per_group))


def test_added_partitions_are_used_without_restart(
    kafka_cluster: Any, make_topic: Callable[..., str]
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = make_topic(2)
    # one router refreshes on invalidate() only, one by age
    by_invalidate, producer = _router_producer(
        bootstrap, RoundRobinPartitioner(), metadata_max_age_s=3600
    )
    by_age, producer_age = _router_producer(
        bootstrap, RoundRobinPartitioner(), metadata_max_age_s=1
    )
    _produce(by_invalidate, producer, topic, [f"a{i}".encode() for i in range(10)])
    _produce(by_age, producer_age, topic, [f"b{i}".encode() for i in range(10)])
    assert set(_read_back(bootstrap, topic, 2).values()) == {0, 1}

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_partitions([NewPartitions(topic, 5)])[topic].result(30)
    deadline = time.monotonic() + 30
    while len(admin.list_topics(topic, timeout=5).topics[topic].partitions) < 5:
        assert time.monotonic() < deadline
        time.sleep(0.2)

    before = by_invalidate.refreshes
    _produce(by_invalidate, producer, topic, [f"c{i}".encode() for i in range(5)])
    assert by_invalidate.refreshes == before  # still cached: 2 partitions
    by_invalidate.invalidate(topic)
    _produce(by_invalidate, producer, topic, [f"d{i}".encode() for i in range(10)])
    time.sleep(1.1)
    _produce(by_age, producer_age, topic, [f"e{i}".encode() for i in range(10)])

    placed = _read_back(bootstrap, topic, 5)
    assert {placed[f"c{i}".encode()] for i in range(5)} <= {0, 1}
    assert {placed[f"d{i}".encode()] for i in range(10)} == {0, 1, 2, 3, 4}
    assert {placed[f"e{i}".encode()] for i in range(10)} == {0, 1, 2, 3, 4}


def test_entry_point_partitioner_selected_by_yaml_profile(
    plugin_dist: str, tmp_path: Path, kafka_cluster: Any, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(4)
    profile_file = tmp_path / "profiles.yaml"
    profile_file.write_text(
        "defaults:\n"
        f"  bootstrap_servers: {kafka_cluster.bootstrap_servers}\n"
        "profiles:\n"
        "  custom:\n"
        "    guarantee: at_least_once\n"
        f"    partitioner: last-class-{plugin_dist}\n"
    )
    profile = load_profiles(profile_file).producer("custom")
    with SdkProducer(profile) as producer:
        assert "partitioner" not in producer.config  # routed in Python, not by librdkafka
        handles = [producer.send(topic, f"v{i}".encode(), key=b"any") for i in range(20)]
    assert {h.result().partition for h in handles} == {3}
    assert set(_read_back(kafka_cluster.bootstrap_servers, topic, 4).values()) == {3}
