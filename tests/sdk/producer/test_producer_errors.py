"""Bad input on a real broker: every failure is a clear SDK error and the record is kept."""

from __future__ import annotations

import socket
import time
from typing import Any

import pytest

from sdk.errors import (
    BrokerUnreachableError,
    DeliveryError,
    KafkaClientError,
    KafkaTimeoutError,
    RecordTooLargeError,
    SerializationError,
    UnknownTopicError,
)
from sdk.producer import Producer, ProducerRecord
from tests.sdk.producer._support import profile

pytestmark = pytest.mark.broker


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unknown_topic_fails_at_send_with_the_record(kafka_cluster: Any) -> None:
    with Producer(profile(kafka_cluster.bootstrap_servers)) as producer:
        started = time.monotonic()
        with pytest.raises(UnknownTopicError, match="no-such-topic") as info:
            producer.send("no-such-topic", b"precious", key=b"k")
        assert time.monotonic() - started < 15
    assert info.value.record == ProducerRecord("no-such-topic", b"precious", b"k")


def test_record_over_client_limit(kafka_cluster: Any, make_topic: Any) -> None:
    topic = make_topic(1)
    big = b"x" * 2_000_000  # librdkafka's message.max.bytes default is 1,000,000
    with Producer(profile(kafka_cluster.bootstrap_servers)) as producer:
        with pytest.raises(RecordTooLargeError, match=f"send to '{topic}'") as info:
            producer.send(topic, big)
        assert info.value.record.value is big
        producer.send_and_wait(topic, b"small", timeout_s=30)  # the producer is still usable


def test_record_over_topic_limit_fails_on_handle_and_flush(
    kafka_cluster: Any, make_topic: Any
) -> None:
    topic = make_topic(1, config={"max.message.bytes": "2000"})
    big = b"y" * 50_000
    producer = Producer(profile(kafka_cluster.bootstrap_servers))
    handle = producer.send(topic, big)
    with pytest.raises(DeliveryError) as flushed:
        producer.flush(30)
    assert len(flushed.value.failures) == 1
    failure = flushed.value.failures[0]
    assert isinstance(failure, RecordTooLargeError) and failure.record.value is big
    assert handle.exception() is failure
    with pytest.raises(RecordTooLargeError):
        handle.result(1)
    # Records batched together with it are refused with it (the broker rejects the batch):
    # each is reported with its own record, none silently.
    together = [producer.send(topic, big), producer.send(topic, b"fits")]
    with pytest.raises(DeliveryError) as again:
        producer.flush(30)
    assert {f.record.value for f in again.value.failures} <= {big, b"fits"}
    assert all(h.done() for h in together)
    assert producer.send_and_wait(topic, b"alone", timeout_s=30).offset >= 0
    producer.flush(5)  # reported once: the next flush is clean
    producer.close()


def test_unreachable_broker_at_first_send() -> None:
    p = profile(f"127.0.0.1:{_closed_port()}")
    producer = Producer(p, metadata_timeout_s=2)
    with pytest.raises(KafkaClientError) as info:
        producer.send("orders", b"v")
    assert isinstance(info.value, (BrokerUnreachableError, KafkaTimeoutError))
    assert "send to 'orders': metadata lookup" in str(info.value)
    assert info.value.record.value == b"v"
    producer.close(1)


def test_unreachable_broker_delivery_timeout_keeps_records() -> None:
    p = profile(f"127.0.0.1:{_closed_port()}", delivery_timeout_ms=2_000)
    producer = Producer(p, check_topics=False)
    handles = [producer.send("orders", f"{i}".encode()) for i in range(3)]
    with pytest.raises(DeliveryError) as info:
        producer.flush(30)
    assert sorted(f.record.value for f in info.value.failures) == [b"0", b"1", b"2"]
    assert all(isinstance(h.exception(), KafkaTimeoutError) for h in handles)
    producer.close(1)


def test_full_local_queue_waits_then_fails_with_the_record() -> None:
    p = profile(
        f"127.0.0.1:{_closed_port()}",
        delivery_timeout_ms=60_000,
        extras={"queue.buffering.max.messages": 5},
    )
    producer = Producer(p, check_topics=False, queue_full_timeout_s=1.0)
    for i in range(5):
        producer.send("orders", f"{i}".encode())
    started = time.monotonic()
    with pytest.raises(KafkaTimeoutError, match="local queue stayed full") as info:
        producer.send("orders", b"sixth")
    assert 0.9 <= time.monotonic() - started < 10
    assert info.value.record.value == b"sixth"
    with pytest.raises(KafkaTimeoutError, match="5 record"):
        producer.close(0.5)


def test_serializer_output_that_is_not_bytes(kafka_cluster: Any, make_topic: Any) -> None:
    topic = make_topic(1)
    with (
        Producer(
            profile(kafka_cluster.bootstrap_servers), value_serializer=lambda obj, _t: str(obj)
        ) as producer,
        pytest.raises(SerializationError, match="returned str, not bytes") as info,
    ):
        producer.send(topic, 42)
    assert info.value.record.value == 42


def test_serializer_that_raises(kafka_cluster: Any, make_topic: Any) -> None:
    topic = make_topic(1)
    producer = Producer(profile(kafka_cluster.bootstrap_servers), value_serializer="json")
    with producer, pytest.raises(SerializationError, match=f"for '{topic}'") as info:
        producer.send(topic, {"not": {1, 2}})  # a set is not JSON
    assert info.value.record.value == {"not": {1, 2}}
    assert info.value.__cause__ is not None or "set" in str(info.value)


def test_an_object_the_serializer_cannot_take_names_the_part_and_the_fix(
    kafka_cluster: Any, make_topic: Any
) -> None:
    topic = make_topic(1)
    with Producer(profile(kafka_cluster.bootstrap_servers)) as producer:  # bytes serializers
        with pytest.raises(SerializationError) as info:
            producer.send(topic, {"id": 1})
        assert str(info.value) == (
            f"serializing the value of a record for '{topic}' failed: the 'bytes' serializer "
            "takes bytes, got dict (a dict value: pass value_serializer='json')"
        )
        with pytest.raises(SerializationError, match="pass key_serializer='str'") as info:
            producer.send(topic, b"v", key="customer-7")
        assert "serializing the key" in str(info.value)
        assert info.value.record.key == "customer-7"
