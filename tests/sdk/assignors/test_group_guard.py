"""The overlay's guards: member metadata in client.id, and a foreign member is refused for real."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer

from sdk.assignors import GroupAssignedConsumer
from sdk.assignors._group import decode_client_id, encode_client_id
from sdk.errors import ConfigurationError
from sdk.testing.backends import KafkaBackend


def test_client_id_round_trip_and_reserved_characters() -> None:
    cid = encode_client_id("svc", "abc123", {"rack": "eu-1a", "weight": "2"})
    assert cid == "svc;ks=abc123;rack=eu-1a;weight=2"
    assert decode_client_id(cid) == ("abc123", {"rack": "eu-1a", "weight": "2"})
    assert decode_client_id("rdkafka") == (None, {})
    with pytest.raises(ConfigurationError):
        encode_client_id("svc", "x", {"rack": "a;b"})


@pytest.mark.broker
def test_member_without_the_overlay_makes_it_refuse_to_assign(
    kafka_cluster: KafkaBackend, make_topic: Callable[..., str], make_group: Callable[..., str]
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = make_topic(4)
    group = make_group()
    config = {"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": 6000}
    plain = Consumer(config)
    plain.subscribe([topic])
    overlay = GroupAssignedConsumer(config, [topic], "sticky")
    try:
        deadline = time.monotonic() + 60
        with pytest.raises(ConfigurationError, match="does not run assignor") as info:
            while time.monotonic() < deadline:
                plain.poll(0.1)
                overlay.poll(0.1)
        assert info.value.field == "group.id"
        assert overlay.share == [] and overlay.assignment() == []
    finally:
        overlay.close()
        plain.close()


def test_consumers_refuse_use_after_close_without_touching_the_network() -> None:
    from sdk.assignors import StaticAssignedConsumer
    from sdk.errors import ClosedError

    config = {"bootstrap.servers": "127.0.0.1:1", "group.id": "g"}
    group = GroupAssignedConsumer(config, ["t"], "sticky")
    static = StaticAssignedConsumer(config, ["t"], "range", members=["a"], member_id="a")
    assert group.consumer is None and static.consumer is None  # lazy: nothing created yet
    for closable in (group, static):
        closable.close()
        with pytest.raises(ClosedError):
            closable.poll(0)


class Broken:
    name = "broken"
    native_name = None

    def assign(self, members: object, partitions: object) -> dict[str, list[object]]:
        raise RuntimeError("assignor bug")


@pytest.mark.broker
def test_a_failing_assignor_leaves_the_member_with_nothing_not_the_native_share(
    kafka_cluster: KafkaBackend, make_topic: Callable[..., str], make_group: Callable[..., str]
) -> None:
    topic = make_topic(3)
    config = {"bootstrap.servers": kafka_cluster.bootstrap_servers, "group.id": make_group()}
    overlay = GroupAssignedConsumer(config, [topic], Broken())  # type: ignore[arg-type]
    try:
        deadline = time.monotonic() + 60
        with pytest.raises(ConfigurationError, match="assignor bug") as info:
            while time.monotonic() < deadline:
                overlay.poll(0.2)
        assert info.value.field == "assignor"
        assert overlay.generations == 1
        assert overlay.assignment() == []  # librdkafka's native range share was not kept
    finally:
        overlay.close()
