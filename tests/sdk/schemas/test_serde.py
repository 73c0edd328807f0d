"""Registry (de)serializers on confluent-kafka's mock:// registry, and failures told apart.

The unit tier: no broker, no JVM. An outage is a closed local port (connection refused), a
poison record is bytes that do not fit, or a schema id the registry does not know.
"""

from __future__ import annotations

import logging
import socket
import struct
import uuid
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml

from sdk.consumer._registry_wait import RegistryWait
from sdk.consumer.engine import RecordDecoder
from sdk.errors import ConfigurationError, SchemaRegistryUnavailableError, SerializationError
from sdk.producer import ProducerRecord
from sdk.schemas import (
    SchemaRegistryConfig,
    avro_deserializer,
    avro_serializer,
    json_schema_deserializer,
    json_schema_serializer,
)
from sdk.serialization import bind_serializer

ORDER = """{"type": "record", "name": "Order", "namespace": "shop",
  "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}]}"""


@dataclass
class _Message:  # what RecordDecoder reads of a confluent_kafka.Message
    value_: bytes | None
    topic_: str = "orders"
    key_: bytes | None = None
    headers_: list[tuple[str, bytes | None]] | None = field(default=None)

    def topic(self) -> str:
        return self.topic_

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return 7

    def key(self) -> bytes | None:
        return self.key_

    def value(self) -> bytes | None:
        return self.value_

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        return self.headers_


def _mock() -> SchemaRegistryConfig:
    return SchemaRegistryConfig(url=f"mock://{uuid.uuid4().hex}")


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/apis/ccompat/v7"


def _serialize(config: SchemaRegistryConfig, value: Any, schema: str = ORDER) -> bytes:
    ser = bind_serializer(avro_serializer(config, schema), "value_serializer")
    record = ProducerRecord("orders", value)
    data = ser(record.value, record)
    assert data is not None
    return data


def test_avro_round_trip_through_the_decoder() -> None:
    config = _mock()
    data = _serialize(config, {"id": 1, "item": "tea"})
    assert data[0] == 0  # Confluent's wire format: magic byte, then the schema id
    decoder = RecordDecoder("bytes", avro_deserializer(config))
    assert decoder.decode(_Message(data)).value == {"id": 1, "item": "tea"}  # type: ignore[arg-type]


def test_json_schema_round_trip() -> None:
    config = _mock()
    schema = '{"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}'
    ser = bind_serializer(json_schema_serializer(config, schema), "value_serializer")
    record = ProducerRecord("orders", {"n": 3})
    data = ser(record.value, record)
    decoder = RecordDecoder("bytes", json_schema_deserializer(config))
    assert decoder.decode(_Message(data)).value == {"n": 3}  # type: ignore[arg-type]


def test_bytes_that_do_not_fit_the_schema_are_a_poison_record() -> None:
    config = _mock()
    data = _serialize(config, {"id": 1, "item": "tea"})
    decoder = RecordDecoder("bytes", avro_deserializer(config))
    for bad in (b"not avro at all", data[:5] + b"\xff\xff\xff"):
        with pytest.raises(SerializationError, match=r"deserializing the value of orders\[0\]@7"):
            decoder.decode(_Message(bad))  # type: ignore[arg-type]


def test_a_schema_id_the_registry_does_not_know_is_a_poison_record() -> None:
    config = _mock()
    _serialize(config, {"id": 1, "item": "tea"})
    unknown = b"\x00" + struct.pack(">I", 999_999) + b"\x02\x06tea"
    decoder = RecordDecoder("bytes", avro_deserializer(config))
    with pytest.raises(SerializationError) as info:
        decoder.decode(_Message(unknown))  # type: ignore[arg-type]
    assert not isinstance(info.value, SchemaRegistryUnavailableError)


def test_an_unreachable_registry_is_retried_then_raised_not_poison(
    caplog: pytest.LogCaptureFixture,
) -> None:
    config = SchemaRegistryConfig(url=_closed_port_url(), registry_timeout_s=5)
    framed = b"\x00" + struct.pack(">I", 1) + b"\x02\x06tea"
    decoder = RecordDecoder("bytes", avro_deserializer(config))
    assert decoder.registry_wait.timeout_s == 5
    now = [0.0]
    retries: list[float] = []
    decoder.registry_wait = RegistryWait(
        5,
        on_retry=lambda: retries.append(now[0]),
        sleep=lambda s: now.__setitem__(0, now[0] + s),
        clock=lambda: now[0],
    )
    with (
        caplog.at_level(logging.WARNING, "sdk.consumer"),
        pytest.raises(SchemaRegistryUnavailableError) as info,
    ):
        decoder.decode(_Message(framed))  # type: ignore[arg-type]
    error = info.value
    assert error.waited_s == pytest.approx(5)
    assert error.url == config.url and error.record.offset() == 7
    assert "gave up on orders[0]@7 after 5.0s" in str(error)
    assert "ConnectError" in str(error)
    assert retries == pytest.approx([0.2, 0.6, 1.4, 3.0, 5.0])  # doubling, a last at the end
    assert "retrying this record for up to 5s" in caplog.text


def test_the_wait_returns_the_record_once_the_registry_answers() -> None:
    config = _mock()
    data = _serialize(config, {"id": 2, "item": "cake"})
    inner = avro_deserializer(config)
    outages = [2]

    def flaky(data: bytes | None, ctx: Any) -> Any:
        if outages[0]:
            outages[0] -= 1
            raise SchemaRegistryUnavailableError("down", url="http://r")
        return inner(data, ctx)

    decoder = RecordDecoder("bytes", flaky)
    slept: list[float] = []
    counted: list[int] = []
    decoder.registry_wait = RegistryWait(60, sleep=slept.append, on_retry=lambda: counted.append(1))
    assert decoder.decode(_Message(data)).value == {"id": 2, "item": "cake"}  # type: ignore[arg-type]
    assert (slept, len(counted)) == ([0.2, 0.4], 2)


def test_the_wait_takes_the_longest_declared_timeout() -> None:
    short = avro_deserializer(_mock().model_copy(update={"registry_timeout_s": 3}))
    long = avro_deserializer(_mock().model_copy(update={"registry_timeout_s": 9}))
    assert RecordDecoder(short, long).registry_wait.timeout_s == 9
    assert RecordDecoder("str", "json").registry_wait.timeout_s == 60


def test_a_serializer_failure_on_an_unreachable_registry_is_told_apart() -> None:
    config = SchemaRegistryConfig(url=_closed_port_url())
    with pytest.raises(SchemaRegistryUnavailableError, match=r"avro .*did not answer"):
        _serialize(config, {"id": 1, "item": "tea"})


def test_config_refuses_contradictions_and_names_the_field() -> None:
    with pytest.raises(ConfigurationError, match="use_latest_version needs auto_register=False"):
        SchemaRegistryConfig(url="http://r", use_latest_version=True)
    with pytest.raises(ConfigurationError) as info:
        SchemaRegistryConfig(url="http://r", subject_name_strategy="per_record")  # type: ignore[arg-type]
    assert info.value.field == "subject_name_strategy"
    with pytest.raises(ConfigurationError) as info:
        SchemaRegistryConfig.from_mapping({"url": "http://r", "timeout": 3})
    assert info.value.field == "timeout"


def test_config_from_yaml_renders_the_client_and_serde_confs() -> None:
    section = yaml.safe_load(
        """
        url: http://registry:8081
        basic_auth: "svc:s3cret"
        subject_name_strategy: topic_record
        auto_register: false
        use_latest_version: true
        registry_timeout_s: 30
        """
    )
    config = SchemaRegistryConfig.from_mapping(section)
    assert "s3cret" not in repr(config)
    client = config.client_conf()
    assert client["basic.auth.user.info"] == "svc:s3cret"
    assert client["url"] == "http://registry:8081"
    # what confluent-kafka's client accepts (it refuses unknown keys; building connects nowhere)
    from confluent_kafka.schema_registry import SchemaRegistryClient

    with SchemaRegistryClient(client):  # close() is confluent-kafka 2.14+ only
        pass
    serde = config.serde_conf(serializer=True)
    assert serde["auto.register.schemas"] is False and serde["use.latest.version"] is True
    assert serde["subject.name.strategy"].__name__ == "topic_record_subject_name_strategy"


def _order_class() -> type:
    """A generated-like Protobuf class (what protoc would make of a one-field Order)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    name = f"shop_{uuid.uuid4().hex[:8]}"
    proto = descriptor_pb2.FileDescriptorProto(name=f"{name}.proto", package=name, syntax="proto3")
    order = proto.message_type.add(name="Order")
    order.field.add(
        name="id",
        number=1,
        type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
        label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    )
    pool = descriptor_pool.Default()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{name}.Order"))


def test_protobuf_round_trip_with_a_generated_class() -> None:
    from sdk.schemas import protobuf_deserializer, protobuf_serializer

    order_class = _order_class()
    config = _mock()
    ser = bind_serializer(protobuf_serializer(config, order_class), "value_serializer")
    record = ProducerRecord("orders", order_class(id=42))
    data = ser(record.value, record)
    decoder = RecordDecoder("bytes", protobuf_deserializer(config, order_class))
    decoded = decoder.decode(_Message(data)).value  # type: ignore[arg-type]
    assert isinstance(decoded, order_class)
    assert decoded.id == 42
