"""The delivery handle's core (``sdk.producer._handle``) against its contract.

No broker, except ``test_handles_resolve_end_to_end``: librdkafka's delivery callback is called
as librdkafka calls it, ``handle(err, msg)``. The rest of the broker-side behaviour of the
handles is in ``test_producer.py``.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest

from sdk.producer._handle import HandleCore, HotPath, new_handle


class _Owner:
    """What a handle reports to (the Producer's side of the contract)."""

    def __init__(self, callback: Any = None, hot_class: Any = None) -> None:
        # the delivered count and on_delivery live on the owner's _hot (HotPath)
        self._hot = (hot_class or HotPath)(set(), callback)
        self.failures: list[tuple[Any, Any]] = []

    @property
    def delivered(self) -> int:
        return int(self._hot.delivered)

    def _failed(self, handle: Any, err: Any) -> None:
        self.failures.append((handle, err))
        handle._state = f"failed: {err}"


@pytest.fixture
def handle_class() -> type[Any]:
    class Handle(HandleCore):
        __slots__ = ()

    return Handle


def test_a_new_handle_is_pending_and_builds_nothing(handle_class: type[Any]) -> None:
    owner = _Owner()
    handle = new_handle(handle_class, owner, "t", b"v", None)
    assert type(handle) is handle_class
    assert handle._owner is owner and handle._state is None and handle._record is None
    assert (handle._topic, handle._value, handle._key) == ("t", b"v", None)


def test_delivery_keeps_the_message_counts_and_calls_on_delivery_once(
    handle_class: type[Any],
) -> None:
    seen: list[Any] = []
    owner = _Owner(seen.append)
    handle = new_handle(handle_class, owner, "t", b"v", b"k")
    message = object()
    assert handle(None, message) is None
    assert handle._state is message and owner.delivered == 1 and seen == [handle]
    assert handle._owner is None  # resolved: no reference to the producer
    handle(None, object())  # librdkafka reports a record once; a second report changes nothing
    handle._deliver(None, object())
    assert handle._state is message and owner.delivered == 1 and seen == [handle]


def test_deliver_method_is_the_same_callback(handle_class: type[Any]) -> None:
    owner = _Owner()
    handle = new_handle(handle_class, owner, "t", None, None)
    handle._deliver(None, "msg")
    assert handle._state == "msg" and owner.delivered == 1 and handle._owner is None


HOT_PATHS: list[Any] = [pytest.param(HotPath, id="hot-path")]


@pytest.mark.parametrize("hot_class", HOT_PATHS)
def test_either_hot_path_counts_and_calls_on_delivery(
    handle_class: type[Any], hot_class: type[Any]
) -> None:
    """The handle reads the delivered count and on_delivery off its owner's ``_hot``."""
    seen: list[Any] = []
    owner = _Owner(seen.append, hot_class)
    for n in range(1, 4):
        handle = new_handle(handle_class, owner, "t", b"v", None)
        handle(None, f"msg {n}")
        assert owner.delivered == n and seen[-1] is handle
    owner._hot.callback = None  # the callback is read per record
    new_handle(handle_class, owner, "t", b"v", None)(None, "msg")
    assert owner.delivered == 4 and len(seen) == 3


@pytest.mark.parametrize("hot_class", HOT_PATHS)
def test_a_hot_path_starts_closed_and_empty(hot_class: type[Any]) -> None:
    known = {"t"}
    hot = hot_class(known)
    assert hot.produce is None and hot.callback is None and hot.delivered == 0
    assert hot.known is known  # the producer's own set: a topic it learns is known at once


def test_failure_goes_to_the_owner_and_then_lets_go_of_it(handle_class: type[Any]) -> None:
    owner = _Owner(callback=lambda h: pytest.fail("on_delivery is the owner's _failed's job"))
    handle = new_handle(handle_class, owner, "t", b"v", None)
    handle("an error", None)
    assert owner.failures == [(handle, "an error")] and owner.delivered == 0
    assert handle._state == "failed: an error" and handle._owner is None


def test_an_error_in_on_delivery_reaches_the_caller_after_the_outcome_is_kept(
    handle_class: type[Any],
) -> None:
    def boom(_: Any) -> None:
        raise ValueError("from on_delivery")

    owner = _Owner(boom)
    handle = new_handle(handle_class, owner, "t", b"v", None)
    with pytest.raises(ValueError, match="from on_delivery"):
        handle(None, "msg")
    assert handle._state == "msg" and owner.delivered == 1 and handle._owner is None


def test_a_resolved_handle_does_not_keep_its_producer_alive(handle_class: type[Any]) -> None:
    """A handle kept by the producer's own on_delivery (a common pattern) makes no leak.

    handle -> owner -> on_delivery -> list -> handle is a cycle while the handle is pending;
    once it resolves the first edge is gone, so the owner is freed with its last reference.
    """
    handles: list[Any] = []
    owner = _Owner(handles.append)
    alive = weakref.ref(owner)
    handle = new_handle(handle_class, owner, "t", b"v", None)
    handles.append(handle)
    handle(None, "msg")
    del owner, handle, handles
    gc.collect()
    assert alive() is None


def test_wrong_calls_are_refused_with_a_type_error(handle_class: type[Any]) -> None:
    handle = new_handle(handle_class, _Owner(), "t", b"v", None)
    with pytest.raises(TypeError):
        handle(None)
    with pytest.raises(TypeError):
        new_handle(handle_class, _Owner(), "t")


@pytest.mark.broker
def test_handles_resolve_end_to_end(kafka_cluster: Any, make_topic: Any) -> None:
    """The Producer sends, resolves and counts; an independent reader (kafka-python) counts
    what landed."""
    from kafka import KafkaConsumer

    from sdk.producer import Producer, ProducerRecord
    from sdk.profiles import ProducerProfile

    bs, topic = kafka_cluster.bootstrap_servers, make_topic(2)
    seen: list[Any] = []
    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bs)
    with Producer(profile, on_delivery=seen.append) as producer:
        one = producer.send(topic, b"one", key=b"k")
        many = producer.send_many([ProducerRecord(topic, b"many-%d" % i) for i in range(50)])
        producer.flush(30)
        assert one.result(10).topic == topic and one.record.value == b"one"
        assert [h.result(10).offset >= 0 for h in many] == [True] * 50
        assert producer.delivered == 51 and len(seen) == 51
    reader = KafkaConsumer(
        topic, bootstrap_servers=bs, auto_offset_reset="earliest", consumer_timeout_ms=5000
    )
    values = sorted(m.value for m in reader)
    reader.close()
    assert values == sorted([b"one"] + [b"many-%d" % i for i in range(50)])
