"""Registry serializers in the Producer: failures name key/value and the serializer (no broker)."""

from __future__ import annotations

import socket
import uuid

import pytest

from sdk.errors import SchemaRegistryUnavailableError, SerializationError
from sdk.producer import Producer
from sdk.profiles import ProducerProfile
from sdk.schemas import SchemaRegistryConfig, avro_serializer
from sdk.testing.fakes import FakeProducerClient

ORDER = """{"type": "record", "name": "Order", "namespace": "shop",
  "fields": [{"name": "id", "type": "long"}]}"""


def _producer(config: SchemaRegistryConfig) -> tuple[Producer, list[FakeProducerClient]]:
    clients: list[FakeProducerClient] = []

    def factory(conf: dict[str, object]) -> FakeProducerClient:
        clients.append(FakeProducerClient(conf))
        return clients[-1]

    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers="fake:9092")
    producer = Producer(
        profile,
        key_serializer=avro_serializer(config, '"string"'),
        value_serializer=avro_serializer(config, ORDER),
        check_topics=False,
        telemetry=False,
        client_factory=factory,
    )
    return producer, clients


def test_an_object_the_schema_does_not_fit_names_the_part_and_the_serializer() -> None:
    producer, _ = _producer(SchemaRegistryConfig(url=f"mock://{uuid.uuid4().hex}"))
    with pytest.raises(SerializationError) as info:
        producer.send("orders", {"id": "not a long"}, key="k1")
    message = str(info.value)
    assert message.startswith("serializing the value of a record for 'orders' with the 'avro'")
    assert info.value.record.value == {"id": "not a long"}
    with pytest.raises(SerializationError, match=r"serializing the key .* with the 'avro'"):
        producer.send("orders", {"id": 1}, key=7)


def test_a_registered_record_is_queued_in_the_wire_format() -> None:
    producer, clients = _producer(SchemaRegistryConfig(url=f"mock://{uuid.uuid4().hex}"))
    producer.send("orders", {"id": 1}, key="k1")
    (sent,) = clients[0].produced
    assert sent.value()[:1] == b"\x00" and sent.key()[:1] == b"\x00"


def test_an_unreachable_registry_is_not_a_serialization_error() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    producer, _ = _producer(SchemaRegistryConfig(url=url))
    with pytest.raises(SchemaRegistryUnavailableError) as info:
        producer.send("orders", {"id": 1}, key="k1")
    assert not isinstance(info.value, SerializationError)
    assert info.value.url == url and info.value.record.key == "k1"
    assert "avro (orders key)" in str(info.value)


def test_a_serialization_failure_inside_a_transaction_aborts_it() -> None:
    clients: list[FakeProducerClient] = []

    def factory(conf: dict[str, object]) -> FakeProducerClient:
        clients.append(FakeProducerClient(conf))
        return clients[-1]

    config = SchemaRegistryConfig(url=f"mock://{uuid.uuid4().hex}")
    profile = ProducerProfile(
        guarantee="exactly_once", bootstrap_servers="fake:9092", transactional_id="orders-1"
    )
    with Producer(
        profile,
        value_serializer=avro_serializer(config, ORDER),
        check_topics=False,
        telemetry=False,
        client_factory=factory,
    ) as producer:
        with pytest.raises(SerializationError), producer.transaction():
            producer.send("orders", {"id": 1})
            producer.send("orders", {"id": "not a long"})
        client = clients[-1]
        assert (client.pending, client.committed, client.in_transaction) == ([], [], False)
