"""PartitionRouter logic against a fake metadata client (the broker tests use the real one)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from sdk.errors import ConfigurationError, KafkaTimeoutError, UnknownTopicError
from sdk.partitioners import FunctionPartitioner, PartitionRouter, StickyPartitioner
from sdk.partitioners._python import RoundRobinPartitioner


@dataclass
class _TopicMeta:
    partitions: dict[int, Any]
    error: Any = None


@dataclass
class _Cluster:
    topics: dict[str, _TopicMeta]


@dataclass
class FakeMetadata:
    counts: dict[str, int]
    calls: list[str] = field(default_factory=list)
    fail_with: KafkaError | None = None

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> _Cluster:
        assert topic is not None
        self.calls.append(topic)
        if self.fail_with is not None:
            raise KafkaException(self.fail_with)
        if topic not in self.counts:
            err = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
            return _Cluster({topic: _TopicMeta({}, err)})
        return _Cluster({topic: _TopicMeta(dict.fromkeys(range(self.counts[topic])))})


def test_native_partitioner_routes_nothing_and_sets_config() -> None:
    fake = FakeMetadata({"t": 3})
    router = PartitionRouter("murmur2", {"bootstrap.servers": "x:1"}, metadata_client=fake)
    assert router.native
    assert router.producer_config() == {"partitioner": "murmur2_random"}
    assert router.route("t", b"k", b"v") is None
    assert router.route("t", b"k", b"v", partition=2) == 2
    assert fake.calls == []  # no metadata for native routing
    assert PartitionRouter("consistent", {}).producer_config() == {"partitioner": "consistent"}


def test_python_partitioner_uses_cached_count() -> None:
    fake = FakeMetadata({"t": 4})
    router = PartitionRouter(RoundRobinPartitioner(), {}, metadata_client=fake)
    assert not router.native
    assert router.producer_config() == {}
    assert [router.route("t", None, b"v") for _ in range(8)] == [0, 1, 2, 3] * 2
    assert fake.calls == ["t"]
    assert router.refreshes == 1
    assert router.route("t", None, b"v", partition=1) == 1


def test_new_partitions_are_used_after_max_age_or_invalidate() -> None:
    fake = FakeMetadata({"t": 2})
    last = FunctionPartitioner("last", lambda k, v, n: n - 1)
    router = PartitionRouter(last, {}, metadata_client=fake, metadata_max_age_s=0.2)
    assert router.route("t", b"k", None) == 1
    fake.counts["t"] = 5
    assert router.route("t", b"k", None) == 1  # cached
    time.sleep(0.25)
    assert router.route("t", b"k", None) == 4
    fake.counts["t"] = 6
    router.invalidate("t")
    assert router.route("t", b"k", None) == 5
    fake.counts["t"] = 7
    router.invalidate()
    assert router.partition_count("t") == 7
    assert len(fake.calls) == 4


def test_failed_refresh_keeps_last_count_first_failure_raises() -> None:
    fake = FakeMetadata({"t": 3})
    router = PartitionRouter(RoundRobinPartitioner(), {}, metadata_client=fake)
    with pytest.raises(UnknownTopicError):
        router.route("missing", None, b"v")
    router.route("t", None, b"v")
    fake.fail_with = KafkaError(KafkaError._TIMED_OUT)
    router.invalidate("t")
    assert router.route("t", None, b"v") == 1  # stale count still routes
    with pytest.raises(KafkaTimeoutError):
        router.route("other", None, b"v")


def test_out_of_range_result_is_refused() -> None:
    fake = FakeMetadata({"t": 3})
    bad = FunctionPartitioner("bad", lambda k, v, n: n)
    router = PartitionRouter(bad, {}, metadata_client=fake)
    with pytest.raises(ConfigurationError, match="returned partition 3"):
        router.route("t", b"k", None)


def test_on_batch_sent_is_forwarded_to_sticky() -> None:
    fake = FakeMetadata({"t": 5})
    router = PartitionRouter(StickyPartitioner(batch_bytes=10**9), {}, metadata_client=fake)
    first = router.route("t", None, b"v")
    assert router.route("t", None, b"v") == first
    router.on_batch_sent("t")
    assert router.route("t", None, b"v") != first
    router.on_batch_sent("never-seen")  # no state yet: nothing to do
    PartitionRouter(RoundRobinPartitioner(), {}, metadata_client=fake).on_batch_sent("t")


def test_bad_arguments() -> None:
    with pytest.raises(ConfigurationError):
        PartitionRouter("round_robin", {}, metadata_max_age_s=0)
    with pytest.raises(ConfigurationError, match="valid names"):
        PartitionRouter("nope", {})
