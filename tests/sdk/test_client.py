"""``sdk._client.positional_produce``: every argument positional, on every kind of client.

The hot paths (``send()``, ``send_many``, the Processor's emitter, the general path) call
``produce(topic, value, key, partition, on_delivery)``. These tests hold that call to what each
client does with it: confluent-kafka's own ``produce`` must take the fifth argument as the
delivery callback and ``-1`` as "the partitioner"; anything else gets an adapter. No broker: a
closed port, where a record's delivery fails after ``message.timeout.ms``.
"""

from __future__ import annotations

from typing import Any

from confluent_kafka import KafkaError, Producer

from sdk._client import consume_ready, positional_produce, takes_all_positional
from sdk.testing.fakes import FakeProducerClient


def _closed_port_producer() -> Producer:
    return Producer({"bootstrap.servers": "127.0.0.1:1", "message.timeout.ms": 200, "log_level": 0})


def test_confluent_kafka_produce_is_used_as_it_is() -> None:
    client = _closed_port_producer()
    assert positional_produce(client) == client.produce  # the bound method, no adapter


def test_the_fifth_argument_of_confluent_kafka_produce_is_the_delivery_callback() -> None:
    # if a confluent-kafka release moved its parameters, the hot paths would pass the handle
    # as something else: this is what says so
    client = _closed_port_producer()
    reports: list[tuple[Any, Any]] = []
    positional_produce(client)("t", b"v", b"k", -1, lambda err, msg: reports.append((err, msg)))
    assert client.flush(10) == 0
    assert len(reports) == 1
    err, msg = reports[0]
    assert err is not None and err.code() == KafkaError._MSG_TIMED_OUT
    assert (msg.topic(), msg.value(), msg.key()) == ("t", b"v", b"k")


def test_minus_one_is_the_partitioner_and_an_explicit_partition_is_kept() -> None:
    client = FakeProducerClient(partitions={"t": 3})
    produce = positional_produce(client)
    produce("t", b"v", None, -1, None)
    produce("t", b"v", None, 2, None)
    seen = [m.partition() for m in client.produced]
    assert seen == [0, 2]  # the fake's partitioner places -1 on partition 0


def test_a_client_of_another_kind_gets_an_adapter_passing_on_delivery_by_keyword() -> None:
    client = FakeProducerClient()
    reports: list[Any] = []
    produce = positional_produce(client)
    assert produce != client.produce
    produce("t", b"v", b"k", -1, lambda err, msg: reports.append(msg.value()))
    client.poll(0)
    assert reports == [b"v"]


def test_a_subclass_that_overrides_produce_gets_the_adapter() -> None:
    calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []

    class Recording(Producer):  # type: ignore[misc]
        def produce(self, *args: Any, **kwargs: Any) -> None:
            calls.append((args, kwargs))

    client = Recording({"bootstrap.servers": "127.0.0.1:1", "log_level": 0})
    callback = object()
    positional_produce(client)("t", b"v", None, -1, callback)
    assert calls == [(("t", b"v", None, -1), {"on_delivery": callback})]


def test_which_client_types_take_every_argument_positional() -> None:
    class Keeps(Producer):  # type: ignore[misc]
        pass

    class Overrides(Producer):  # type: ignore[misc]
        def produce(self, *args: Any, **kwargs: Any) -> None:
            pass

    assert takes_all_positional(Producer) and takes_all_positional(Keeps)
    assert not takes_all_positional(Overrides)
    assert not takes_all_positional(FakeProducerClient)


class _Queued:
    """A client whose ``consume`` hands out what is queued; ``arrive`` comes in on a wait."""

    def __init__(self, queued: list[int], arrive: list[int]) -> None:
        self.queued, self.arrive, self.calls = list(queued), list(arrive), []

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[int]:
        self.calls.append((num_messages, timeout))
        if not self.queued and timeout > 0:
            self.queued, self.arrive = self.arrive, []
        out, self.queued = self.queued[:num_messages], self.queued[num_messages:]
        return out


def test_consume_ready_takes_what_is_queued_without_waiting() -> None:
    client = _Queued([1, 2, 3], [])
    assert consume_ready(client, 500, 0.1) == [1, 2, 3]  # type: ignore[arg-type]
    assert client.calls == [(500, 0)]


def test_consume_ready_waits_for_one_then_takes_what_came_with_it() -> None:
    client = _Queued([], [7, 8, 9])
    assert consume_ready(client, 500, 0.1) == [7, 8, 9]  # type: ignore[arg-type]
    assert client.calls == [(500, 0), (1, 0.1), (499, 0)]
    idle = _Queued([], [])
    assert consume_ready(idle, 500, 0.1) == []  # type: ignore[arg-type]
    assert idle.calls == [(500, 0), (1, 0.1)]
    assert consume_ready(_Queued([], [4, 5]), 1, 0.1) == [4]  # type: ignore[arg-type]
