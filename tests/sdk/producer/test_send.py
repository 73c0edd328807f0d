"""``Producer.send()``: its fast path and its general path, bound or called on the class.

No broker: a real confluent-kafka client pointed at a closed port queues records locally,
which is all ``send()`` does before librdkafka's own thread takes over; nothing is ever
delivered. The broker-side behaviour of ``send()`` is in ``test_producer.py``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer as RawProducer

from sdk.errors import ClosedError, KafkaTimeoutError, RecordTooLargeError
from sdk.producer import DeliveryHandle, Producer, ProducerRecord
from sdk.profiles import ProducerProfile


def _bound_send(producer: Producer, *args: Any, **kwargs: Any) -> Any:
    """``send = producer.send; send(...)``: a bound method kept by the caller."""
    send = producer.send
    return send(*args, **kwargs)


SENDS: list[Any] = [
    pytest.param(Producer.send, id="method"),
    pytest.param(_bound_send, id="bound"),
]

CLOSED_PORT = "127.0.0.1:1"  # nothing listens: records stay queued in librdkafka


class _InterruptingClient(RawProducer):  # type: ignore[misc]
    """A real client whose ``produce`` is interrupted for one value (Ctrl-C mid-call)."""

    def produce(self, *args: Any, **kwargs: Any) -> None:
        if len(args) > 1 and args[1] == b"interrupt":
            raise KeyboardInterrupt
        super().produce(*args, **kwargs)


def _producer(**client: Any) -> Producer:
    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers=CLOSED_PORT)
    cls = client.pop("cls", RawProducer)
    return Producer(
        profile,
        check_topics=False,  # no broker to ask; the topic is known after its first record
        telemetry=False,
        queue_full_timeout_s=0.2,
        client_factory=lambda config: cls({**config, "log_level": 0, **client}),
    )


@pytest.fixture(params=SENDS)
def send(request: pytest.FixtureRequest) -> Any:
    return request.param


@pytest.fixture
def producer() -> Iterator[Producer]:
    p = _producer()
    Producer.send(p, "t", b"warm")  # opens the client; "t" is known from now on
    yield p
    _drop(p)


def _drop(p: Producer) -> None:
    """Throw the queued records away (nothing is delivered) and close."""
    if p._client is not None:
        p._client.purge()
        p._client.poll(0)  # their failure callbacks
    p._ledger.failures.clear()
    p.close(0)


def _queued_with_its_handle(p: Producer, handle: DeliveryHandle) -> bool:
    """Whether librdkafka queued a record whose delivery callback is ``handle``.

    Purged, a queued record's callback runs at once with a purge error; ``len(client)`` would
    count the connection-error events of the closed port too.
    """
    assert not handle.done()
    p._client.purge()
    p._client.poll(0)
    p._ledger.failures.clear()
    return handle.done() and "purge" in str(handle.exception()).lower()


@pytest.mark.parametrize(
    ("args", "kwargs", "parts"),
    [
        (("t", b"v"), {}, ("t", b"v", None)),
        (("t", b"v"), {"key": b"k"}, ("t", b"v", b"k")),
        (("t",), {"value": b"v", "key": b"k"}, ("t", b"v", b"k")),
        (("t", None), {"key": b"k", "headers": None, "timestamp_ms": None}, ("t", None, b"k")),
        (("t", b"v"), {"partition": None}, ("t", b"v", None)),
    ],
    ids=["value", "key", "value-keyword", "nones", "partition-none"],
)
def test_the_fast_path_queues_the_record_with_a_handle_of_its_parts(
    send: Any, producer: Producer, args: Any, kwargs: Any, parts: Any
) -> None:
    handle = send(producer, *args, **kwargs)
    assert type(handle) is DeliveryHandle
    assert handle._record is None  # the fast path: no ProducerRecord built
    assert (handle._topic, handle._value, handle._key) == parts
    assert handle._owner is producer
    assert _queued_with_its_handle(producer, handle)
    assert handle.record == ProducerRecord(*parts)


@pytest.mark.parametrize(
    ("args", "kwargs", "record"),
    [
        (("t", b"v"), {"headers": [("h", b"1")]}, ProducerRecord("t", b"v", None, [("h", b"1")])),
        (("t", b"v"), {"timestamp_ms": 1234}, ProducerRecord("t", b"v", None, None, None, 1234)),
        (("t", b"v"), {"partition": 2}, ProducerRecord("t", b"v", None, None, 2)),
        ((ProducerRecord("t", b"v", b"k"),), {}, ProducerRecord("t", b"v", b"k")),
        (("other", b"v"), {}, ProducerRecord("other", b"v")),  # not known yet
        (("t", bytearray(b"v")), {}, ProducerRecord("t", bytearray(b"v"))),  # not exactly bytes
    ],
    ids=["headers", "timestamp", "partition", "record", "new-topic", "bytearray"],
)
def test_every_other_call_goes_down_the_general_path(
    send: Any, producer: Producer, args: Any, kwargs: Any, record: ProducerRecord
) -> None:
    handle = send(producer, *args, **kwargs)
    assert type(handle) is DeliveryHandle
    assert handle._record == record  # built by the general path
    assert _queued_with_its_handle(producer, handle)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((), {}, "missing 1 required positional argument: 'topic'"),
        (("t", b"v", b"k"), {}, "positional argument"),
        (("t", b"v"), {"value": b"w"}, "multiple values for argument 'value'"),
        (("t", b"v"), {"keys": b"k"}, "unexpected keyword argument 'keys'"),
    ],
)
def test_a_bad_call_fails_as_the_python_method_says(
    send: Any, producer: Producer, args: Any, kwargs: Any, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        send(producer, *args, **kwargs)


def test_a_refused_record_goes_to_the_general_path_which_translates(
    send: Any, producer: Producer
) -> None:
    big = b"x" * 1_100_000  # over message.max.bytes: librdkafka refuses it in produce()
    with pytest.raises(RecordTooLargeError) as info:
        send(producer, "t", big, key=b"k")
    assert info.value.record == ProducerRecord("t", big, b"k")


def test_a_full_queue_is_waited_on_then_reported(send: Any) -> None:
    p = _producer(**{"queue.buffering.max.messages": 1})
    try:
        Producer.send(p, "t", b"first")  # opens the client; fills the queue
        with pytest.raises(KafkaTimeoutError) as info:
            send(p, "t", b"second", key=b"k")
        assert info.value.record == ProducerRecord("t", b"second", b"k")
    finally:
        _drop(p)


def test_an_interrupt_in_produce_propagates_and_keeps_nothing(send: Any) -> None:
    p = _producer(cls=_InterruptingClient)
    try:
        Producer.send(p, "t", b"warm")
        value = b"interrupt"
        refs = sys.getrefcount(p), sys.getrefcount(value)
        with pytest.raises(KeyboardInterrupt):
            send(p, "t", value)
        assert (sys.getrefcount(p), sys.getrefcount(value)) == refs  # the handle is gone
    finally:
        _drop(p)


def test_a_closed_producer_is_refused(send: Any) -> None:
    p = _producer()
    Producer.send(p, "t", b"warm")
    _drop(p)
    with pytest.raises(ClosedError):
        send(p, "t", b"v")


def test_fast_path_handles_hold_their_parts_and_release_them_when_dropped(
    send: Any, producer: Producer
) -> None:
    topic, value, key = "t", b"held value", b"held key"
    refs = sys.getrefcount(value), sys.getrefcount(key)
    handles = [send(producer, topic, value, key=key) for _ in range(100)]
    assert sys.getrefcount(value) - refs[0] >= 100  # each handle holds its value
    producer._client.purge()
    producer._client.poll(0)  # the failure callbacks resolve every handle
    producer._ledger.failures.clear()
    del handles
    assert (sys.getrefcount(value), sys.getrefcount(key)) == refs
