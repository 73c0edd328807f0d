"""The record types (``sdk.records``): the ``ConsumerRecord`` view, ``OutputRecord``'s
constructor and ``last_positions``, against their contract. No broker (the Processor's and the
Consumer's tests run them on the broker).
"""

from __future__ import annotations

import collections
import gc
import pickle
import random
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Message

from sdk import records
from sdk.records import ConsumerRecord, OutputRecord


class _Message:
    """What a view reads from a ``confluent_kafka.Message``."""

    def __init__(self, topic: str, partition: int, offset: int, key: Any = b"k", value: Any = b"v"):
        self._t, self._p, self._o, self._k, self._v = topic, partition, offset, key, value

    def topic(self) -> str:
        return self._t

    def partition(self) -> int:
        return self._p

    def offset(self) -> int:
        return self._o

    def key(self) -> Any:
        return self._k

    def value(self) -> Any:
        return self._v

    def headers(self) -> Any:
        return [("h", b"1")]

    def timestamp(self) -> tuple[int, int]:
        return (1, 1700000000000)

    def delivery_count(self) -> int | None:
        return None


def _real_message(topic: str, partition: int, offset: int) -> Any:
    return Message(topic=topic, partition=partition, offset=offset, key=b"k", value=b"v")


Core = tuple[type[Any], Any, Any]  # (record class, view, last_positions)


@pytest.fixture
def core() -> Core:
    class Record(ConsumerRecord):  # a subclass, as the queue's record is
        __slots__ = ()

    return Record, records.view, records.last_positions


def test_a_view_holds_key_value_and_message_and_reads_the_rest_from_it(core: Core) -> None:
    cls, view, _ = core
    msg = _Message("orders", 3, 41, key=b"k1", value=b"v1")
    record = view(cls, msg)
    assert type(record) is cls
    assert (record.key, record.value, record.raw) == (b"k1", b"v1", msg)
    assert (record.topic, record.partition, record.offset) == ("orders", 3, 41)
    assert (record._key, record._value, record._raw) == (b"k1", b"v1", msg)


@pytest.mark.parametrize("name", ["key", "value", "raw", "topic", "partition", "offset"])
def test_a_view_is_read_only_for_handlers(core: Core, name: str) -> None:
    cls, view, _ = core
    record = view(cls, _Message("t", 0, 0))
    with pytest.raises(AttributeError):
        setattr(record, name, b"changed")
    with pytest.raises(AttributeError):
        record.anything_else = 1  # no __dict__: a view per record stays small


def test_a_cycle_through_a_deserialized_value_is_collected(core: Core) -> None:
    """A value that refers back to its record (a handler may do that) must not leak."""
    cls, _, _ = core

    class Value:
        record: Any = None

    value = Value()
    value.record = cls(None, value, _Message("t", 0, 0))
    gone = weakref.ref(value)
    del value
    gc.collect()
    assert gone() is None


def test_a_view_with_a_deserialized_value_is_seen_by_the_collector(core: Core) -> None:
    cls, _, _ = core
    decoded = cls({"k": 1}, {"v": 2}, _Message("t", 0, 0))
    assert gc.is_tracked(decoded)


def test_a_field_never_set_is_an_attribute_error(core: Core) -> None:
    cls, _, _ = core
    empty = cls.__new__(cls)  # what a subclass's __init__ that forgot a field leaves
    for name in ("key", "value", "raw"):
        with pytest.raises(AttributeError):
            getattr(empty, name)


def test_a_failing_message_method_propagates(core: Core) -> None:
    cls, view, last = core

    class Broken(_Message):
        def value(self) -> Any:
            raise RuntimeError("no value")

        def offset(self) -> int:
            raise RuntimeError("no offset")

    with pytest.raises(RuntimeError, match="no value"):
        view(cls, Broken("t", 0, 0))
    with pytest.raises(RuntimeError, match="no offset"):
        last([Broken("t", 0, 0)], {})


def _batches(kind: str, topics: list[str], seed: int) -> Iterator[list[Any]]:
    """200 batches of 0-39 messages of ``topics`` (3 partitions each), offsets with gaps."""
    make: Any = _Message if kind == "stand-in" else _real_message
    rng = random.Random(seed)
    for _ in range(200):
        next_offset: dict[tuple[str, int], int] = collections.defaultdict(int)
        msgs = []
        for _ in range(rng.randrange(0, 40)):
            tp = (rng.choice(topics), rng.randrange(3))
            next_offset[tp] += rng.randrange(1, 4)  # gaps, as compaction and markers leave
            msgs.append(make(tp[0], tp[1], next_offset[tp]))
        yield msgs


@pytest.mark.parametrize("kind", ["stand-in", "confluent_kafka.Message"])
def test_last_positions_keeps_each_partitions_last_offset_plus_one(core: Core, kind: str) -> None:
    _, _, last = core
    for msgs in _batches(kind, ["a", "b", "bb"], seed=7):
        expected = {("z", 9): 5}
        for m in msgs:
            expected[(m.topic(), m.partition())] = m.offset() + 1
        into = {("z", 9): 5}  # a partition not in the batch keeps its position
        last(msgs, into)
        assert into == expected
        into = {("z", 9): 5}
        last(iter(msgs), into)  # any iterable
        assert into == expected


@pytest.mark.parametrize("kind", ["stand-in", "confluent_kafka.Message"])
def test_last_positions_of_one_topic_are_those_of_the_general_walk(core: Core, kind: str) -> None:
    """``topic`` given (a subscription to that topic alone): the same positions."""
    _, _, last = core
    for msgs in _batches(kind, ["orders"], seed=11):
        general = {("orders", 9): 5, ("z", 0): 1}
        last(msgs, general)
        by_partition = {("orders", 9): 5, ("z", 0): 1}  # those not in the batch are kept
        last(msgs, by_partition, "orders")
        assert by_partition == general


@pytest.mark.parametrize(
    ("topics", "expected"),
    [(["orders"], "orders"), (["a", "b"], None), (["^orders-.*"], None), ([], None)],
)
def test_only_topic_is_the_one_literal_topic_of_a_subscription(
    topics: list[str], expected: str | None
) -> None:
    assert records.only_topic(topics) == expected


def test_last_positions_refuses_what_is_not_a_dict_or_iterable(core: Core) -> None:
    _, _, last = core
    with pytest.raises(TypeError):
        last(5, {})


_Reference = collections.namedtuple(
    "_Reference", ["topic", "value", "key", "headers", "partition"], defaults=[None, None, None]
)

_CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("t", b"v"), {}),
    (("t", None, "k"), {}),
    (("t", b"v", b"k", [("h", b"1")], 2), {}),
    (("t",), {"value": b"v", "partition": 0}),
    ((), {"topic": "t", "value": b"v", "key": b"k", "headers": None}),
    (("t", b"v"), {"partition": 1, "key": None}),
]

_BAD: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {}),
    (("t",), {}),
    (("t", b"v", None, None, None, "extra"), {}),
    (("t", b"v"), {"topic": "again"}),
    (("t", b"v"), {"colour": "red"}),
    ((), {"value": b"v"}),
]


class _Named(OutputRecord):
    """A subclass of the output record."""

    __slots__ = ()


@pytest.mark.parametrize("cls", [OutputRecord, _Named])
@pytest.mark.parametrize(("args", "kwargs"), _CALLS)
def test_output_record_is_built_as_the_named_tuple_would_be(
    cls: type[OutputRecord], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    record = cls(*args, **kwargs)
    assert type(record) is cls
    assert tuple(record) == tuple(_Reference(*args, **kwargs))
    assert record == pickle.loads(pickle.dumps(record))
    assert record._replace(key=b"x").key == b"x"
    assert cls._make(tuple(record)) == record


@pytest.mark.parametrize("cls", [OutputRecord, _Named])
@pytest.mark.parametrize(("args", "kwargs"), _BAD)
def test_output_record_refuses_what_the_named_tuple_refuses(
    cls: type[OutputRecord], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(TypeError):
        _Reference(*args, **kwargs)
    with pytest.raises(TypeError):
        cls(*args, **kwargs)


def test_consumer_record_reads_its_fields_from_the_message() -> None:
    record = ConsumerRecord(b"k", b"v", _Message("t", 1, 2))
    assert (record.topic, record.partition, record.offset, record.key) == ("t", 1, 2, b"k")
    assert record.headers == (("h", b"1"),) and record.timestamp_ms == 1700000000000
    assert record == records.view(ConsumerRecord, _Message("t", 1, 2))
