"""Every SDK output path places keys by the profile's partitioner.

The Processor once rendered its producer without the profile's partitioner, so librdkafka's
CRC32 default placed its keyed output: the same key landed on different partitions depending
on which SDK path wrote it. Now the Producer and the Processor (each guarantee) both produce
through the transactional session's Producer; each must place every key where Java's
producer would, and a custom partitioner named in the profile must be honoured too.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import Producer as RawProducer

from sdk.partitioners import FunctionPartitioner, register_partitioner
from sdk.partitioners._registry import unregister_partitioner
from sdk.processor import OutputRecord, Processor
from sdk.producer import Producer
from sdk.profiles import ProcessingProfile, ProducerProfile
from tests.placement import java_murmur2, java_partition, placement
from tests.sdk.partitioners.test_native import JAVA_MURMUR2_VECTORS

pytestmark = pytest.mark.broker

PARTITIONS = 12
KEYS = [f"key-{i}".encode() for i in range(120)]


def java_placement(keys: list[bytes] = KEYS) -> dict[bytes, set[int]]:
    return {k: {java_partition(k, PARTITIONS)} for k in keys}


def test_the_reference_murmur2_is_javas() -> None:
    for key, java_hash in JAVA_MURMUR2_VECTORS.items():
        assert java_murmur2(key) == java_hash


def test_producer_places_keys_like_java(kafka_cluster: Any, make_topic: Any) -> None:
    bs = kafka_cluster.bootstrap_servers
    dst = make_topic(PARTITIONS)
    with Producer(ProducerProfile(guarantee="at_least_once", bootstrap_servers=bs)) as producer:
        for key in KEYS:
            producer.send(dst, b"v", key=key)
    assert placement(bs, dst, len(KEYS)) == java_placement()


def _profile(guarantee: str, bs: str, group: str, partitioner: str | None = None) -> Any:
    side: dict[str, Any] = {"guarantee": guarantee, "bootstrap_servers": bs}
    producer = dict(side)
    if guarantee == "exactly_once":
        producer["transactional_id_prefix"] = f"{group}-"
    if partitioner is not None:
        producer["partitioner"] = partitioner
    return ProcessingProfile(
        guarantee=guarantee,
        consumer={**side, "group_id": group, "session_timeout_ms": 6000},
        producer=producer,
    )


def _copy_through_processor(bs: str, src: str, dst: str, profile: ProcessingProfile) -> Any:
    """Copy ``KEYS`` from ``src`` to ``dst`` with a Processor; return its stats."""
    seed = RawProducer({"bootstrap.servers": bs})
    for key in KEYS:
        seed.produce(src, value=b"v", key=key)
    assert seed.flush(30) == 0
    written = 0

    def handler(record: Any) -> list[OutputRecord]:
        nonlocal written
        written += 1
        return [OutputRecord(dst, record.value, record.key)]

    proc = Processor(profile, [src], instance_id="placement")
    box: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: box.update(stats=proc.run(handler, max_duration_s=120))
    )
    thread.start()
    deadline = time.monotonic() + 120
    while written < len(KEYS) and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.2)
    time.sleep(0.5)  # one more commit interval
    proc.stop()
    thread.join(60)
    assert not thread.is_alive() and "stats" in box, "the processor did not finish"
    return box["stats"]


@pytest.mark.parametrize("guarantee", ["at_most_once", "at_least_once", "exactly_once"])
def test_processor_places_keys_like_java(
    guarantee: str, kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst = make_topic(3), make_topic(PARTITIONS)
    stats = _copy_through_processor(bs, src, dst, _profile(guarantee, bs, make_group()))
    assert stats.records_out == len(KEYS)
    assert placement(bs, dst, len(KEYS)) == java_placement()


def test_processor_honours_a_custom_partitioner_named_in_the_profile(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    def mirrored(key: bytes | None, value: bytes | None, n: int) -> int:
        assert key is not None
        return n - 1 - java_partition(key, n)

    register_partitioner("test-mirrored", lambda: FunctionPartitioner("test-mirrored", mirrored))
    try:
        bs = kafka_cluster.bootstrap_servers
        src, dst = make_topic(3), make_topic(PARTITIONS)
        profile = _profile("exactly_once", bs, make_group(), partitioner="test-mirrored")
        _copy_through_processor(bs, src, dst, profile)
        expected = {k: {PARTITIONS - 1 - java_partition(k, PARTITIONS)} for k in KEYS}
        assert placement(bs, dst, len(KEYS)) == expected
    finally:
        unregister_partitioner("test-mirrored")
