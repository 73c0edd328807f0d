"""The Python-only built-ins: round_robin, sticky, key_mod, explicit, FunctionPartitioner."""

from __future__ import annotations

from collections import Counter

import confluent_kafka
import pytest

from sdk.errors import ConfigurationError, SerializationError
from sdk.partitioners import (
    BatchAware,
    FunctionPartitioner,
    KeyModPartitioner,
    StickyPartitioner,
    TopicPartitioner,
    resolve_partitioner,
)
from sdk.partitioners._python import ExplicitPartitioner, RoundRobinPartitioner


@pytest.mark.parametrize(("records", "partitions"), [(1000, 7), (10, 3), (2, 5), (999, 1)])
def test_round_robin_is_even_within_one(records: int, partitions: int) -> None:
    tp = RoundRobinPartitioner().for_topic("t")
    counts = Counter(tp.partition(b"k", None, partitions) for _ in range(records))
    per_partition = [counts.get(p, 0) for p in range(partitions)]
    assert sum(per_partition) == records
    assert max(per_partition) - min(per_partition) <= 1


def test_round_robin_counter_is_per_topic() -> None:
    rr = RoundRobinPartitioner()
    a, b = rr.for_topic("a"), rr.for_topic("b")
    assert [a.partition(None, None, 3) for _ in range(4)] == [0, 1, 2, 0]
    assert b.partition(None, None, 3) == 0


def _runs(partitions: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for p in partitions:
        if runs and runs[-1][0] == p:
            runs[-1] = (p, runs[-1][1] + 1)
        else:
            runs.append((p, 1))
    return runs


def test_sticky_switches_after_batch_bytes() -> None:
    tp = StickyPartitioner(batch_bytes=1000).for_topic("t")
    chosen = [tp.partition(None, b"x" * 100, 4) for _ in range(95)]
    runs = _runs(chosen)
    # 10 records of 100 bytes fill a batch; a switch always goes to a different partition
    assert [length for _, length in runs] == [10] * 9 + [5]
    assert tp.switches == 9
    assert len({p for p, _ in runs}) > 1


def test_sticky_switches_on_batch_sent_and_hashes_keys() -> None:
    tp = StickyPartitioner(batch_bytes=10**9).for_topic("t")
    assert isinstance(tp, BatchAware)
    first = [tp.partition(None, b"v", 6) for _ in range(20)]
    assert len(set(first)) == 1
    key_partition = tp.partition(b"user-1", b"v", 6)
    assert key_partition == confluent_kafka.murmur2(b"user-1", 6)
    assert tp.partition(None, b"v", 6) == first[0]  # keyed records do not move the sticky one
    tp.on_batch_sent()
    second = tp.partition(None, b"v", 6)
    assert second != first[0]
    assert tp.switches == 1


def test_sticky_repicks_when_partition_disappears_and_single_partition() -> None:
    tp = StickyPartitioner(batch_bytes=1).for_topic("t")
    assert {tp.partition(None, b"vv", 1) for _ in range(10)} == {0}
    with pytest.raises(ConfigurationError):
        StickyPartitioner(batch_bytes=0)


def test_key_mod_decimal_and_big_endian() -> None:
    dec = KeyModPartitioner().for_topic("t")
    assert dec.partition(b"42", None, 10) == 2
    assert dec.partition(b"-1", None, 10) == 9
    be = KeyModPartitioner(encoding="big_endian").for_topic("t")
    assert be.partition((1234).to_bytes(4, "big"), None, 100) == 34
    assert be.partition((-3).to_bytes(8, "big", signed=True), None, 4) == 1
    with pytest.raises(SerializationError):
        dec.partition(b"not-a-number", None, 3)
    with pytest.raises(SerializationError):
        dec.partition(None, b"v", 3)
    with pytest.raises(ConfigurationError) as err:
        KeyModPartitioner(encoding="utf16")  # type: ignore[arg-type]
    assert err.value.field == "encoding"


def test_explicit_refuses_records_without_partition() -> None:
    tp = ExplicitPartitioner().for_topic("orders")
    with pytest.raises(ConfigurationError, match="orders") as err:
        tp.partition(b"k", b"v", 3)
    assert err.value.field == "partition"


def test_function_partitioner() -> None:
    def by_length(key: bytes | None, value: bytes | None, n: int) -> int:
        return len(value or b"") % n

    fp = FunctionPartitioner("by_length", by_length, requires_consistency=False)
    assert resolve_partitioner(fp) is fp
    tp = fp.for_topic("t")
    assert isinstance(tp, TopicPartitioner)
    assert tp.partition(None, b"abcde", 3) == 2
    assert fp.native_name is None
