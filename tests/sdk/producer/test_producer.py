"""The SDK Producer on a real broker: sending, placement, transactions, lifecycle."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from sdk.errors import ClosedError, ConfigurationError, DeliveryError
from sdk.lifecycle import Lifecycle
from sdk.producer import Producer, ProducerRecord, RecordMetadata
from tests.placement import java_partition
from tests.sdk.producer._support import profile, read_all

pytestmark = pytest.mark.broker


def test_no_client_before_first_send() -> None:
    producer = Producer(profile("127.0.0.1:1"))  # nothing listens there; nothing is contacted
    assert producer.state is Lifecycle.NEW
    producer.close()
    assert producer.state is Lifecycle.CLOSED
    with pytest.raises(ClosedError, match="closed"):
        producer.send("t", b"v")


def test_send_round_trip_with_serializers_and_headers(kafka_cluster: Any, make_topic: Any) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(3)
    with Producer(profile(bs), key_serializer="str", value_serializer="json") as producer:
        handle = producer.send(topic, {"id": 7}, key="k7", headers={"source": b"test"})
        meta = handle.result(timeout_s=30)
        assert handle.done() and handle.exception() is None
        assert isinstance(meta, RecordMetadata) and meta.topic == topic and meta.offset >= 0
        meta2 = producer.send_and_wait(ProducerRecord(topic, {"id": 8}, "k8"), timeout_s=30)
    assert producer.state is Lifecycle.CLOSED
    msgs = read_all(bs, topic, 2)
    by_key = {m.key(): m for m in msgs}
    assert json.loads(by_key[b"k7"].value()) == {"id": 7}
    assert by_key[b"k7"].headers() == [("source", b"test")]
    assert (by_key[b"k7"].partition(), by_key[b"k7"].offset()) == (meta.partition, meta.offset)
    assert (by_key[b"k8"].partition(), by_key[b"k8"].offset()) == (meta2.partition, meta2.offset)


def test_default_placement_is_java_murmur2(kafka_cluster: Any, make_topic: Any) -> None:
    """Keys land where the Java client puts them: murmur2(key) & 0x7fffffff % n."""
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(6)
    with Producer(profile(bs), key_serializer="str") as producer:
        handles = [producer.send(topic, b"x", key=f"key-{i}") for i in range(300)]
        producer.flush(30)
    for i, h in enumerate(handles):
        key = f"key-{i}".encode()
        java = java_partition(key, 6)
        assert h.result().partition == java, key


def test_python_partitioner_from_profile(kafka_cluster: Any, make_topic: Any) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(4)
    with Producer(profile(bs, partitioner="round_robin")) as producer:
        handles = producer.send_many(ProducerRecord(topic, f"{i}".encode()) for i in range(400))
        producer.flush(30)
    counts = [0] * 4
    for h in handles:
        counts[h.result().partition] += 1
    assert counts == [100, 100, 100, 100]


def test_fast_path_handles_report_the_callers_record_and_where_it_landed(
    kafka_cluster: Any, make_topic: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(1)
    seen: list[Any] = []
    with Producer(profile(bs), on_delivery=seen.append) as producer:
        producer.send(topic, b"warm").result(30)  # opens the client, looks the topic up
        handle = producer.send(topic, b"v1", key=b"k1")
        assert handle._record is None  # the fast path: no ProducerRecord built yet
        many = producer.send_many([ProducerRecord(topic, b"v2", b"k2")])
        meta, meta2 = handle.result(30), many[0].result(30)
    assert handle.record == ProducerRecord(topic, b"v1", b"k1")
    assert many[0].record == ProducerRecord(topic, b"v2", b"k2")
    assert (meta.topic, meta.partition, meta.offset) == (topic, 0, 1)
    assert (meta2.topic, meta2.partition, meta2.offset) == (topic, 0, 2)
    assert meta2.timestamp_ms is not None and meta2.timestamp_ms > 0
    assert seen[1:] == [handle, many[0]]  # on_delivery gets the very handles


def test_send_many_delivers_everything_in_order(kafka_cluster: Any, make_topic: Any) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(1)
    n = 20_000
    with Producer(profile(bs)) as producer:
        handles = producer.send_many(ProducerRecord(topic, str(i).encode()) for i in range(n))
        producer.flush(60)
        assert producer.delivered == n and producer.failed == 0
    assert [h.result().offset for h in handles] == list(range(n))
    values = [int(m.value()) for m in read_all(bs, topic, n)]
    assert values == list(range(n))


def test_transaction_commit_and_abort(kafka_cluster: Any, make_topic: Any) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(2)
    with Producer(profile(bs, "exactly_once")) as producer:
        with producer.transaction():
            producer.send(topic, b"committed-1")
            producer.send(topic, b"committed-2")
        with pytest.raises(RuntimeError, match="handler blew up"), producer.transaction():
            producer.send(topic, b"aborted")
            raise RuntimeError("handler blew up")
        with producer.transaction():
            producer.send(topic, b"committed-3")
    values = sorted(m.value() for m in read_all(bs, topic))
    assert values == [b"committed-1", b"committed-2", b"committed-3"]


def test_transactions_refused_without_exactly_once(kafka_cluster: Any) -> None:
    producer = Producer(profile(kafka_cluster.bootstrap_servers))
    with pytest.raises(ConfigurationError, match="exactly_once") as info:
        producer.begin_transaction()
    assert info.value.field == "guarantee"
    producer.close()


def test_prefix_profile_needs_concrete_id() -> None:
    p = profile(
        "127.0.0.1:1", "exactly_once", transactional_id=None, transactional_id_prefix="svc-"
    )
    with pytest.raises(ConfigurationError) as info:
        Producer(p)
    assert info.value.field == "transactional_id"
    assert Producer(p, transactional_id="svc-0").config["transactional.id"] == "svc-0"


def test_bad_librdkafka_extra_is_a_configuration_error() -> None:
    producer = Producer(profile("127.0.0.1:1", extras={"no.such.setting": 1}))
    with pytest.raises(ConfigurationError, match=r"no\.such\.setting"):
        producer.send("t", b"v")


def test_python_partitioner_picks_up_added_partitions(kafka_cluster: Any, make_topic: Any) -> None:
    from confluent_kafka.admin import AdminClient, NewPartitions

    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(2)
    with Producer(profile(bs, partitioner="round_robin"), partition_refresh_s=1.0) as producer:
        before = producer.send_many(ProducerRecord(topic, b"b") for _ in range(10))
        producer.flush(30)
        admin = AdminClient({"bootstrap.servers": bs})
        admin.create_partitions([NewPartitions(topic, 4)])[topic].result(30)
        time.sleep(1.5)  # past partition_refresh_s: the next record refreshes the count
        after = producer.send_many(ProducerRecord(topic, b"a") for _ in range(20))
        producer.flush(30)
    assert {h.result().partition for h in before} == {0, 1}
    assert {h.result().partition for h in after} == {0, 1, 2, 3}


def test_on_delivery_sees_every_resolved_handle(kafka_cluster: Any, make_topic: Any) -> None:
    topic = make_topic(1, config={"max.message.bytes": "2000"})
    seen: list[tuple[bool, bool]] = []
    producer = Producer(
        profile(kafka_cluster.bootstrap_servers),
        on_delivery=lambda h: seen.append((h.done(), h.exception() is None)),
    )
    producer.send_and_wait(topic, b"small", timeout_s=30)
    producer.send(topic, b"z" * 10_000)
    with pytest.raises(Exception, match="failed delivery"):
        producer.flush(30)
    producer.close()
    assert seen == [(True, True), (True, False)]


def test_exactly_once_send_outside_a_transaction_is_explained(
    kafka_cluster: Any, make_topic: Any
) -> None:
    from sdk.errors import TransactionError

    topic = make_topic(1)
    with Producer(profile(kafka_cluster.bootstrap_servers, "exactly_once")) as producer:
        producer.init_transactions()
        with pytest.raises(TransactionError, match="only inside a transaction") as info:
            producer.send(topic, b"v")
        assert info.value.record.value == b"v"


def test_send_batch_counts_and_reports_failures_at_flush(
    kafka_cluster: Any, make_topic: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    ok_topic = make_topic(2)
    small_topic = make_topic(1, config={"max.message.bytes": "2000"})
    with Producer(profile(bs), value_serializer="str") as producer:
        n = producer.send_batch(ProducerRecord(ok_topic, str(i)) for i in range(5000))
        assert n == 5000
        producer.flush(60)
        assert producer.delivered == 5000
        producer.send_batch([ProducerRecord(small_topic, "z" * 10_000)])
        with pytest.raises(DeliveryError) as info:
            producer.flush(30)
    (failure,) = info.value.failures
    assert failure.record.topic == small_topic
    assert failure.record.value == b"z" * 10_000  # its serialized form: nothing lost
    assert sorted(int(m.value()) for m in read_all(bs, ok_topic, 5000)) == list(range(5000))
