"""``Producer.send()``'s fast path with serializers: the same bytes and errors as the general path.

A record without headers, timestamp or partition, to a known topic, is serialized and queued
by ``send()`` itself (``_send_serializing``); a record with headers still takes the general
path. Both must queue the same bytes and raise the same errors. No broker: the client is a
real confluent-kafka producer pointed at a closed port whose ``produce`` calls are recorded.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer as RawProducer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext

from sdk.errors import SchemaRegistryUnavailableError, SerializationError
from sdk.producer import DeliveryHandle, Producer, ProducerRecord
from sdk.profiles import ProducerProfile
from sdk.schemas import RegistrySerializer, SchemaRegistryConfig, avro_serializer

ORDER = """{"type": "record", "name": "Order", "namespace": "t",
  "fields": [{"name": "id", "type": "long"}, {"name": "customer", "type": "string"}]}"""
HEADERS = [("h", b"1")]  # a record with headers takes the general path


class _Recording(RawProducer):  # type: ignore[misc]
    """A real client that remembers the (topic, value, key) of each record it queued."""

    def __init__(self, config: dict[str, Any]) -> None:
        super().__init__(config)
        self.queued: list[tuple[Any, ...]] = []

    def produce(self, *args: Any, **kwargs: Any) -> None:
        super().produce(*args, **kwargs)
        topic, value = args[0], args[1] if len(args) > 1 else kwargs.get("value")
        key = args[2] if len(args) > 2 else kwargs.get("key")
        self.queued.append((topic, value, key))


def _producer(key_serializer: Any = "bytes", value_serializer: Any = "bytes") -> Producer:
    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers="127.0.0.1:1")
    p = Producer(
        profile,
        key_serializer=key_serializer,
        value_serializer=value_serializer,
        check_topics=False,  # no broker to ask; a topic is known after its first record
        telemetry=False,
        client_factory=lambda config: _Recording({**config, "log_level": 0}),
    )
    return p


@pytest.fixture
def made() -> Iterator[list[Producer]]:
    producers: list[Producer] = []
    yield producers
    for p in producers:
        if p._client is not None:
            p._client.purge()
            p._client.poll(0)
        p._ledger.failures.clear()
        p.close(0)


def _warm(made: list[Producer], p: Producer, *topics: str) -> _Recording:
    """Open the client and make ``topics`` known with a record through the general path."""
    made.append(p)
    for topic in topics:
        p.send(topic, None, headers=HEADERS)
    client: _Recording = p._client  # type: ignore[assignment]
    client.queued.clear()
    return client


def test_str_and_json_serializers_take_the_fast_path_with_the_callers_record(
    made: list[Producer],
) -> None:
    p = _producer("str", "json")
    client = _warm(made, p, "t")
    handle = p.send("t", {"id": 1}, key="k1")
    assert type(handle) is DeliveryHandle
    assert handle._record is None  # the fast path: no ProducerRecord built
    assert client.queued == [("t", b'{"id":1}', b"k1")]
    assert handle.record == ProducerRecord("t", {"id": 1}, "k1")  # the caller's objects
    p.send("t", {"id": 1}, key="k1", headers=HEADERS)  # the general path: the same bytes
    assert client.queued[1] == client.queued[0]


def test_a_registry_serializer_writes_the_same_bytes_on_both_paths(made: list[Producer]) -> None:
    config = SchemaRegistryConfig(url="mock://fast-path-bytes")
    p = _producer("str", avro_serializer(config, ORDER))
    client = _warm(made, p, "orders")
    p.send("orders", {"id": 7, "customer": "c"}, key="7")
    p.send("orders", {"id": 7, "customer": "c"}, key="7", headers=HEADERS)
    fast, general = client.queued
    assert fast == general
    assert fast[1][:1] == b"\x00" and len(fast[1]) > 5  # the wire format: magic byte, id


def test_a_registry_serializer_gets_one_context_per_topic_and_field(
    made: list[Producer],
) -> None:
    seen: list[SerializationContext] = []

    def inner(obj: Any, ctx: SerializationContext) -> bytes | None:
        seen.append(ctx)
        return None if obj is None else str(obj).encode()

    config = SchemaRegistryConfig(url="mock://fast-path-contexts")
    ser = RegistrySerializer("avro", inner, config)
    p = _producer(ser, ser)
    _warm(made, p, "a", "b")
    seen.clear()  # the warm-up's, from the general path
    for topic in ("a", "b", "a", "b"):
        p.send(topic, 1, key=2)
    by = {(c.topic, c.field): c for c in seen}
    assert sorted(by) == [
        ("a", MessageField.KEY),
        ("a", MessageField.VALUE),
        ("b", MessageField.KEY),
        ("b", MessageField.VALUE),
    ]
    assert all(c.headers is None for c in seen)
    assert len({id(c) for c in seen}) == 4  # 8 calls, one context per topic and field


@pytest.mark.parametrize("headers", [None, HEADERS], ids=["fast", "general"])
def test_a_failing_serializer_raises_the_same_error_and_queues_nothing(
    made: list[Producer], headers: Any
) -> None:
    def broken(obj: Any, ctx: SerializationContext) -> bytes | None:
        if obj is None:  # the warm-up record
            return None
        raise ValueError("cannot write this")

    p = _producer("str", broken)
    client = _warm(made, p, "t")
    with pytest.raises(SerializationError) as info:
        p.send("t", {"id": 1}, key="k", headers=headers)
    assert "value" in str(info.value) and "'t'" in str(info.value)
    assert "broken" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)
    assert info.value.record == ProducerRecord("t", {"id": 1}, "k", headers)
    assert client.queued == []


def test_the_error_is_the_same_text_on_both_paths(made: list[Producer]) -> None:
    def broken(obj: Any, ctx: SerializationContext) -> bytes | None:
        if obj is None:  # the warm-up record
            return None
        raise ValueError("cannot write this")

    p = _producer(broken, "str")
    _warm(made, p, "t")
    texts = []
    for headers in (None, HEADERS):
        with pytest.raises(SerializationError) as info:
            p.send("t", "v", key="k", headers=headers)
        texts.append(str(info.value))
    assert texts[0] == texts[1]


@pytest.mark.parametrize(
    ("key_serializer", "value_serializer", "key", "value", "says"),
    [
        ("str", lambda obj, ctx: obj, "k", "not bytes", "returned str, not bytes"),
        ("str", "bytes", "k", "a str", "'bytes' serializer takes bytes, got str"),
        ("bytes", "str", "a str key", "v", "'bytes' serializer takes bytes, got str"),
        ("str", "str", b"k", "v", "'str' serializer takes str, got bytes"),
    ],
    ids=["returns-str", "bytes-value-given-str", "bytes-key-given-str", "str-key-given-bytes"],
)
def test_a_wrong_type_is_refused_as_on_the_general_path(
    made: list[Producer],
    key_serializer: Any,
    value_serializer: Any,
    key: Any,
    value: Any,
    says: str,
) -> None:
    p = _producer(key_serializer, value_serializer)
    client = _warm(made, p, "t")
    with pytest.raises(SerializationError, match=says) as info:
        p.send("t", value, key=key)
    assert info.value.record == ProducerRecord("t", value, key)
    assert client.queued == []


def test_an_unreachable_registry_is_told_apart_on_the_fast_path(made: list[Producer]) -> None:
    def down(obj: Any, ctx: SerializationContext) -> bytes | None:
        if obj is None:  # the warm-up record
            return None
        raise SchemaRegistryError(503, 50301, "registry unavailable")

    config = SchemaRegistryConfig(url="mock://fast-path-down")
    p = _producer("str", RegistrySerializer("avro", down, config))
    client = _warm(made, p, "t")
    with pytest.raises(SchemaRegistryUnavailableError, match="HTTP 503") as info:
        p.send("t", {"id": 1}, key="k")
    assert info.value.record == ProducerRecord("t", {"id": 1}, "k")
    assert client.queued == []
