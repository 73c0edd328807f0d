"""The delivery handle's core (``sdk.producer._handle``) against its contract.

No broker, except the two tests marked ``broker``: librdkafka's delivery callback is called
as librdkafka calls it, ``handle(err, msg)``. The rest of the broker-side behaviour of the
handles is in ``test_producer.py``.
"""

from __future__ import annotations

import functools
import gc
import threading
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


def _delivered_by_librdkafka(
    owner: _Owner, handle_class: type[Any], message: Any, err: Any = None
) -> None:
    """A new handle delivered as librdkafka calls it: from C, through its only reference."""
    handle = new_handle(handle_class, owner, "t", b"v" * 100, b"k")
    call = functools.partial(handle, err, message)  # holds the handle; called from C
    del handle
    next(iter(call, object()))


def test_a_delivered_handle_nobody_holds_is_cleared_and_kept_for_the_next_send(
    handle_class: type[Any],
) -> None:
    seen: list[bytes] = []
    owner = _Owner(lambda h: seen.append(h._value[:1]))  # reads it, keeps nothing
    owner._hot.reusable = handle_class
    _delivered_by_librdkafka(owner, handle_class, object())
    assert owner.delivered == 1 and seen == [b"v"]  # on_delivery saw it before it was cleared
    [spare] = owner._hot.spare
    assert type(spare) is handle_class and spare._owner is None
    assert (spare._state, spare._record, spare._value, spare._key) == (None, None, None, None)


def test_a_held_handle_or_another_class_is_never_kept_for_reuse(
    handle_class: type[Any],
) -> None:
    kept: list[Any] = []
    owner = _Owner(kept.append)  # on_delivery keeps it
    owner._hot.reusable = handle_class
    _delivered_by_librdkafka(owner, handle_class, "m1")
    assert owner._hot.spare == [] and kept[0]._state == "m1" and kept[0]._value == b"v" * 100

    owner = _Owner()
    owner._hot.reusable = handle_class
    handle = new_handle(handle_class, owner, "t", b"v", None)  # the caller holds it
    next(iter(functools.partial(handle, None, "m2"), object()))
    assert owner._hot.spare == [] and handle._state == "m2" and handle._value == b"v"

    class Other(handle_class):  # type: ignore[misc]
        __slots__ = ()

    _delivered_by_librdkafka(owner, Other, "m3")  # not the producer's reusable class
    assert owner._hot.spare == []
    owner._hot.reusable = None  # and none at all: nothing kept
    _delivered_by_librdkafka(owner, handle_class, "m4")
    assert owner._hot.spare == [] and owner.delivered == 3


def test_a_failed_handle_is_never_kept_for_reuse(handle_class: type[Any]) -> None:
    owner = _Owner()
    owner._hot.reusable = handle_class
    _delivered_by_librdkafka(owner, handle_class, None, "an error")
    assert owner._hot.spare == [] and owner.failures[0][0]._state == "failed: an error"


@pytest.mark.broker
def test_send_reuses_handles_nobody_holds_and_never_one_that_is_held(
    kafka_cluster: Any, make_topic: Any
) -> None:
    """Handles kept by the caller keep their record and outcome while others are reused;
    threads sending at once lose nothing; an independent reader (kafka-python) counts."""
    from kafka import KafkaConsumer

    from sdk.producer import Producer
    from sdk.profiles import ProducerProfile

    bs, topic = kafka_cluster.bootstrap_servers, make_topic(3)
    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bs, linger_ms=5)
    with Producer(profile) as producer:
        assert producer.send(topic, b"first").result(30).offset >= 0  # held on the stack
        kept = [producer.send(topic, b"kept-%d" % i) for i in range(0, 3000, 3)]
        for i in range(3000):
            if i % 3:
                producer.send(topic, b"free-%d" % i)  # not held: reused after delivery
        producer.flush(30)
        spare = producer._hot.spare
        first = {id(h) for h in spare}
        assert 0 < len(spare) <= 2000
        assert not first & {id(h) for h in kept}

        def sender(t: int) -> None:
            for i in range(5000):
                producer.send(topic, b"t%d-%d" % (t, i))

        threads = [threading.Thread(target=sender, args=(t,)) for t in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        producer.flush(30)
        assert first & {id(h) for h in spare}  # the same objects, sent again
        assert [h.record.value for h in kept] == [b"kept-%d" % i for i in range(0, 3000, 3)]
        assert all(h.result(1).topic == topic for h in kept) and producer.delivered == 23001
    assert spare == []  # close() lets them go
    reader = KafkaConsumer(
        topic, bootstrap_servers=bs, auto_offset_reset="earliest", consumer_timeout_ms=5000
    )
    values = sorted(m.value for m in reader)
    reader.close()
    expected = [b"first"] + [b"kept-%d" % i for i in range(0, 3000, 3)]
    expected += [b"free-%d" % i for i in range(3000) if i % 3]
    expected += [b"t%d-%d" % (t, i) for t in range(4) for i in range(5000)]
    assert values == sorted(expected)


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
