"""The record types' core (``sdk.core.records``): the compiled one and its Python twin.

Both cores keep one contract; every test here runs on both (the compiled one where it was
built): the ``ConsumerRecord`` view, ``OutputRecord``'s constructor and ``last_positions``.
No broker, except ``test_pure_python_core_end_to_end``, which runs the exactly-once Processor
with the Python core on the broker and counts its output with kafka-python.
"""

from __future__ import annotations

import collections
import gc
import os
import pickle
import random
import shutil
import subprocess
import sys
import weakref
from typing import Any

import pytest
from confluent_kafka import Message

from sdk.core import records
from sdk.core.records import ConsumerRecord, OutputRecord, PyRecordCore
from tests.pure_python import run_pure_python


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


Core = tuple[type[Any], Any, Any]  # (record class on the core, view, last_positions)

CORES: list[Any] = [pytest.param("python", id="python")]
if records.COMPILED:
    from sdk.core import _speedups

    CORES.append(pytest.param("compiled", id="compiled"))


@pytest.fixture(params=CORES)
def core(request: pytest.FixtureRequest) -> Core:
    if request.param == "python":
        base, view, last = PyRecordCore, records._py_view, records._py_last_positions
    else:
        base, view, last = _speedups.RecordCore, _speedups.view, _speedups.last_positions

    class Record(base):  # type: ignore[misc, valid-type]  # ConsumerRecord's shape on this core
        __slots__ = ()

        def __init__(self, key: Any, value: Any, raw: Any) -> None:
            self._key, self._value, self._raw = key, value, raw

    return Record, view, last


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


def test_a_raw_view_is_left_to_reference_counting(core: Core) -> None:
    """Bytes and librdkafka's message cannot lead back to the view: compiled, it is not
    tracked by the collector (one less young object per record); with the Python core it is."""
    cls, view, _ = core
    raw = view(cls, _Message("t", 0, 0))
    decoded = cls({"k": 1}, {"v": 2}, _Message("t", 0, 0))
    assert gc.is_tracked(decoded)
    assert gc.is_tracked(raw) is (cls.__mro__[1] is PyRecordCore)


def test_a_field_never_set_is_an_attribute_error_on_both_cores(core: Core) -> None:
    """The compiled members are T_OBJECT_EX, as the Python core's properties read a slot."""
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


@pytest.mark.parametrize("kind", ["stand-in", "confluent_kafka.Message"])
def test_last_positions_keeps_each_partitions_last_offset_plus_one(core: Core, kind: str) -> None:
    """A real ``Message`` is read through its methods themselves (compiled), others by name."""
    _, _, last = core
    make: Any = _Message if kind == "stand-in" else _real_message
    rng = random.Random(7)
    for _ in range(200):
        next_offset: dict[tuple[str, int], int] = collections.defaultdict(int)
        msgs = []
        for _ in range(rng.randrange(0, 40)):
            tp = (rng.choice(["a", "b", "bb"]), rng.randrange(3))
            next_offset[tp] += rng.randrange(1, 4)  # gaps, as compaction and markers leave
            msgs.append(make(tp[0], tp[1], next_offset[tp]))
        expected = {("z", 9): 5}
        for m in msgs:
            expected[(m.topic(), m.partition())] = m.offset() + 1
        into = {("z", 9): 5}  # a partition not in the batch keeps its position
        last(msgs, into)
        assert into == expected
        into = {("z", 9): 5}
        last(iter(msgs), into)  # any iterable
        assert into == expected


def test_last_positions_refuses_what_is_not_a_dict_or_iterable(core: Core) -> None:
    _, _, last = core
    with pytest.raises(TypeError):
        last(5, {})
    if last is not records._py_last_positions:  # Python accepts any mapping, C a dict only
        with pytest.raises(TypeError):
            last([], [])


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
    """A subclass: never called directly (CPython does not inherit a class's vectorcall)."""

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


_PATCHED = """
from sdk.core import records
from sdk.core.records import OutputRecord
from sdk.core import _speedups
import pickle
# pickling caches __slotnames__ on the class: a change, after which it is still fit
assert pickle.loads(pickle.dumps(OutputRecord("t", b"v"))) == OutputRecord("t", b"v")
assert _speedups.calls_directly(OutputRecord)
seen = []
plain_new = OutputRecord.__new__
def new(cls, *args, **kwargs):
    seen.append("new")
    return plain_new(cls, *args, **kwargs)
def init(self, *args, **kwargs):
    seen.append("init")
OutputRecord.__new__ = new
OutputRecord.__init__ = init
record = OutputRecord("t", b"v", key=b"k")
assert tuple(record) == ("t", b"v", b"k", None, None), record
assert seen == ["new", "init"], seen
assert not _speedups.calls_directly(OutputRecord)
print("honoured")
"""


@pytest.mark.skipif(not records.COMPILED, reason="the compiled core was not built")
def test_output_record_is_called_directly_until_its_class_is_changed() -> None:
    """A patched ``__new__`` or ``__init__`` (a test's, say) is honoured, not bypassed.

    A harmless change (pickle caching ``__slotnames__`` on the class) keeps the direct calls.
    In a fresh interpreter: the patch must not leave this process's class the slow way.
    """
    assert _speedups.calls_directly(OutputRecord)
    assert not _speedups.calls_directly(_Named)
    done = subprocess.run(
        [sys.executable, "-c", _PATCHED], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "honoured"


@pytest.mark.skipif(not records.COMPILED, reason="the compiled core was not built")
def test_direct_calls_refuses_any_other_class() -> None:
    class Plain(tuple):  # type: ignore[type-arg]
        __slots__ = ()

    class WithInit(OutputRecord):
        __slots__ = ()

        def __init__(self, *args: Any) -> None:
            pass

    for cls in (Plain, WithInit, _Named, OutputRecord, int):
        with pytest.raises(TypeError):
            _speedups.direct_calls(cls)  # OutputRecord: once is enough
    assert _speedups.calls_directly(OutputRecord)


def test_consumer_record_is_built_on_the_core_in_use() -> None:
    assert ConsumerRecord.__mro__[1] is records.RecordCore
    record = ConsumerRecord(b"k", b"v", _Message("t", 1, 2))
    assert (record.topic, record.partition, record.offset, record.key) == ("t", 1, 2, b"k")
    assert record.headers == (("h", b"1"),) and record.timestamp_ms == 1700000000000
    assert record == records.view(ConsumerRecord, _Message("t", 1, 2))


@pytest.mark.skipif(
    os.environ.get("SDK_PURE_PYTHON") is not None or shutil.which("cc") is None,
    reason="no C compiler here, or the pure-Python core was asked for",
)
def test_the_extension_is_built_where_a_compiler_is() -> None:
    """The build marks the extension optional; this catches a build that silently failed."""
    assert records.COMPILED, "sdk.core._speedups was not built: run pip install -e . again"
    assert OutputRecord.__new__ is _speedups.output_new
    assert _speedups.calls_directly(OutputRecord)


_END_TO_END = """
import uuid
from kafka import KafkaConsumer, KafkaProducer
from sdk.core import records
from sdk.processor import OutputRecord, Processor
from sdk.profiles import ProcessingProfile

assert not records.COMPILED
bs, source, out, n = {bs!r}, {source!r}, {out!r}, 300
producer = KafkaProducer(bootstrap_servers=bs)
for i in range(n):
    producer.send(source, b"%d" % i, key=b"k%d" % (i % 7))
producer.flush()
group = "pure-" + uuid.uuid4().hex[:6]
profile = ProcessingProfile(
    guarantee="exactly_once",
    consumer={{"guarantee": "exactly_once", "bootstrap_servers": bs, "group_id": group}},
    producer={{"guarantee": "exactly_once", "bootstrap_servers": bs,
              "transactional_id_prefix": group + "-"}},
    commit_interval_ms=50,
)
seen = 0

def copy(record):
    global seen
    seen += 1
    if seen >= n:
        processor.stop()
    return [OutputRecord(out, record.value + b"!", record.key)]

processor = Processor(profile, [source], copy, instance_id="a")
processor.run(max_seconds=60)
reader = KafkaConsumer(out, bootstrap_servers=bs, auto_offset_reset="earliest",
                       isolation_level="read_committed", consumer_timeout_ms=5000)
values = sorted(int(m.value[:-1]) for m in reader)
assert values == list(range(n)), (len(values), values[:5])
print("ok", len(values))
"""


@pytest.mark.broker
def test_pure_python_core_end_to_end(kafka_cluster: Any, make_topic: Any) -> None:
    """With ``SDK_PURE_PYTHON=1`` the exactly-once Processor copies every record once; an
    independent reader (kafka-python, read_committed) counts what landed."""
    script = _END_TO_END.format(
        bs=kafka_cluster.bootstrap_servers, source=make_topic(2), out=make_topic(2)
    )
    assert run_pure_python(script, timeout=180)[:2] == ["ok", "300"]
