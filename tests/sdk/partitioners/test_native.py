"""The native-twin built-ins: Kafka's Java murmur2 vectors, CRC32, null-key rules."""

from __future__ import annotations

import zlib
from collections import Counter

import pytest

from sdk.partitioners import resolve_partitioner
from sdk.partitioners._native import CONSISTENT, CONSISTENT_RANDOM, FNV1A, MURMUR2, RANDOM

# apache/kafka clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2:
# the signed 32-bit result of Utils.murmur2(bytes).
JAVA_MURMUR2_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


def _java_partition(signed_hash: int, n: int) -> int:
    # BuiltInPartitioner.partitionForKey: Utils.toPositive(murmur2(key)) % numPartitions
    return (signed_hash & 0x7FFFFFFF) % n


@pytest.mark.parametrize(("key", "java_hash"), sorted(JAVA_MURMUR2_VECTORS.items()))
def test_murmur2_matches_kafka_java_vectors(key: bytes, java_hash: int) -> None:
    tp = MURMUR2.for_topic("t")
    # with n = 2**31 - 1 the partition *is* toPositive(hash) (none of the vectors hits 2**31 - 1)
    assert tp.partition(key, None, 2**31 - 1) == java_hash & 0x7FFFFFFF
    for n in range(1, 65):
        assert tp.partition(key, b"v", n) == _java_partition(java_hash, n)


def test_consistent_is_crc32() -> None:
    tp = CONSISTENT.for_topic("t")
    for i in range(500):
        key = f"key-{i}".encode()
        assert tp.partition(key, None, 7) == zlib.crc32(key) % 7
    # null keys are hashed as empty (crc32(b"") == 0): always one partition
    assert {tp.partition(None, b"v", 7) for _ in range(50)} == {0}


def test_random_null_keys_use_every_partition() -> None:
    for partitioner in (MURMUR2, FNV1A, CONSISTENT_RANDOM, RANDOM):
        tp = partitioner.for_topic("t")
        seen = Counter(tp.partition(None, b"v", 4) for _ in range(400))
        assert set(seen) == {0, 1, 2, 3}, partitioner.name


def test_empty_key_rules() -> None:
    # murmur2/fnv1a hash b"" (librdkafka only randomises NULL); consistent_random randomises it
    assert {MURMUR2.for_topic("t").partition(b"", None, 5) for _ in range(30)} == {1}
    seen = {CONSISTENT_RANDOM.for_topic("t").partition(b"", None, 5) for _ in range(200)}
    assert len(seen) > 1


def test_random_ignores_keys() -> None:
    tp = RANDOM.for_topic("t")
    assert len({tp.partition(b"same", None, 4) for _ in range(200)}) == 4


def test_native_names_and_consistency() -> None:
    expected = {
        "murmur2": ("murmur2_random", True),
        "fnv1a": ("fnv1a_random", True),
        "consistent": ("consistent", True),
        "consistent_random": ("consistent_random", True),
        "random": ("random", False),
    }
    for name, (native, consistent) in expected.items():
        p = resolve_partitioner(name)
        assert (p.name, p.native_name, p.requires_consistency) == (name, native, consistent)
    assert resolve_partitioner(None).name == "murmur2"
