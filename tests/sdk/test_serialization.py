"""The serializer seam: the (obj, ctx) form, the deprecated (obj, topic) form, the built-ins."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import pytest

from sdk.errors import ConfigurationError
from sdk.producer import ProducerRecord
from sdk.serialization import (
    MessageField,
    SerializationContext,
    bind_deserializer,
    bind_serializer,
    resolve_deserializer,
    resolve_serializer,
)


@dataclass
class _Message:  # the parts of a confluent_kafka.Message a bound deserializer reads
    topic_: str
    headers_: list[tuple[str, bytes | None]] | None

    def topic(self) -> str:
        return self.topic_

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return self.headers_


def test_a_context_serializer_sees_topic_field_and_headers() -> None:
    seen: list[tuple[str, Any, Any]] = []

    def ser(obj: Any, ctx: SerializationContext) -> bytes:
        seen.append((ctx.topic, ctx.field, ctx.headers))
        return b"x"

    record = ProducerRecord("orders", b"v", b"k", [("h", b"1")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new form warns about nothing
        key_ser = bind_serializer(ser, "key_serializer")
        value_ser = bind_serializer(ser, "value_serializer")
    assert key_ser(record.key, record) == b"x"
    assert value_ser(record.value, record) == b"x"
    assert seen == [
        ("orders", MessageField.KEY, [("h", b"1")]),
        ("orders", MessageField.VALUE, [("h", b"1")]),
    ]


def test_a_context_deserializer_sees_the_message_headers() -> None:
    def de(data: bytes | None, context: Any) -> Any:  # named "context": the new form too
        return (data, context.topic, context.field, context.headers)

    message = _Message("orders", [("trace", b"t")])
    bound = bind_deserializer(de, "value_deserializer")
    assert bound(b"d", message) == (b"d", "orders", MessageField.VALUE, [("trace", b"t")])  # type: ignore[arg-type]


def test_an_annotated_second_parameter_takes_the_context() -> None:
    def ser(obj: Any, where: SerializationContext) -> bytes:
        return where.topic.encode()

    record = ProducerRecord("t1", b"v")
    assert bind_serializer(ser, "value_serializer")(record.value, record) == b"t1"


def test_the_topic_form_still_works_with_a_deprecation_warning() -> None:
    def old(obj: Any, topic: str) -> bytes:
        return f"{topic}:{obj}".encode()

    with pytest.warns(DeprecationWarning, match=r"value_serializer: .*old takes \(obj, topic\)"):
        bound = bind_serializer(old, "value_serializer")
    record = ProducerRecord("t2", "v")
    assert bound(record.value, record) == b"t2:v"

    with pytest.warns(DeprecationWarning, match="key_deserializer"):
        bound_in = bind_deserializer(lambda data, t: (t, data), "key_deserializer")
    assert bound_in(b"k", _Message("t3", None)) == ("t3", b"k")  # type: ignore[arg-type]


def test_the_form_is_decided_once_not_per_record() -> None:
    calls: list[str] = []

    def old(obj: Any, topic: str) -> bytes:
        calls.append(topic)
        return b""

    with pytest.warns(DeprecationWarning):
        bound = bind_serializer(old, "value_serializer")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning per record
        for _ in range(3):
            bound(b"", ProducerRecord("t", b""))
    assert calls == ["t", "t", "t"]


def test_confluent_kafka_serializers_plug_in_as_they_are() -> None:
    from confluent_kafka.serialization import StringDeserializer, StringSerializer

    record = ProducerRecord("t", "héllo")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        data = bind_serializer(StringSerializer(), "value_serializer")(record.value, record)
        text = bind_deserializer(StringDeserializer(), "value_deserializer")(
            data,
            _Message("t", None),  # type: ignore[arg-type]
        )
    assert (data, text) == ("héllo".encode(), "héllo")


def test_builtins_are_bound_as_they_are_and_accept_either_second_argument() -> None:
    for name in ("bytes", "str", "json"):
        assert bind_serializer(name, "value_serializer") is resolve_serializer(name)
        assert bind_deserializer(name, "key_deserializer") is resolve_deserializer(name)
    json_out = resolve_serializer("json")
    ctx = SerializationContext("t", MessageField.VALUE)
    assert json_out({"a": 1}, ctx) == json_out({"a": 1}, "t") == b'{"a":1}'  # type: ignore[arg-type]


def test_an_unknown_name_lists_the_valid_ones() -> None:
    with pytest.raises(ConfigurationError, match="valid names: bytes, json, str") as info:
        bind_serializer("avro", "value_serializer")
    assert info.value.field == "value_serializer"
