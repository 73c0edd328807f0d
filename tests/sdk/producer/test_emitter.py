"""The Processor's output emitter (``sdk.producer._emitter``) against its contract.

Recording stand-ins for ``produce``, ``enqueue`` and the span; no broker (the Processor's tests
run the emitter on the broker).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from sdk.producer import _emitter
from sdk.producer._producer import Producer
from sdk.profiles import ProducerProfile
from sdk.records import ConsumerRecord, OutputRecord
from tests.sdk._due import ClockDue


class _Emitter(_emitter.Emitter):
    """The emitter, called as the hot path calls it (its ``emit``), ``emitted`` its own."""

    __slots__ = ()

    def __call__(self, out: Any) -> None:
        self.emit(out)


class _Message:
    """What the emitter's loop reads of a consumed message (its key and value)."""

    def key(self) -> bytes:
        return b"in-k"

    def value(self) -> bytes:
        return b"in-v"


class _Run(_emitter.Emitter):
    """The emitter's loop (``run``): one record, whose handler returns the output.

    ``run`` returns what it would raise; this raises it, as ``emit`` would.
    """

    __slots__ = ()

    def __call__(self, out: Any) -> None:
        i, produced, record, error = self.run(
            [_Message()], 0, 1, 1, lambda record: [out], ConsumerRecord, ClockDue(1.0, lambda: 0.0)
        )
        if error is not None:
            raise error
        assert (i, produced, record) == (1, 1, None)


class _EmitRun(_emitter.Emitter):
    """The emitter's loop over outputs computed already (``emit_run``): one record's, ``[out]``."""

    __slots__ = ()

    def __call__(self, out: Any) -> None:
        i, produced, error = self.emit_run([[out]], 0, 1, ClockDue(1.0, lambda: 0.0))
        if error is not None:
            raise error
        assert (i, produced) == (1, 1)


MAKERS: list[Any] = [
    pytest.param(_Emitter, id="emitter"),
    pytest.param(_Run, id="run"),
    pytest.param(_EmitRun, id="emit-run"),
]


class _Calls:
    """Stand-ins that record what the emitter called."""

    def __init__(self, refuse: BaseException | None = None) -> None:
        self.produced: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.enqueued: list[tuple[Any, Any]] = []
        self.added = 0
        self.refuse = refuse

    def produce(self, *args: Any, **kwargs: Any) -> None:
        if self.refuse is not None:
            raise self.refuse
        self.produced.append((args, kwargs))

    def enqueue(self, out: Any, span: Any) -> None:
        self.enqueued.append((out, span))

    def add(self) -> None:  # the span's
        self.added += 1


def _callback(err: Any, msg: Any) -> None:
    pass


@pytest.fixture(params=MAKERS)
def make(request: pytest.FixtureRequest) -> Any:
    return request.param


def _emit(make: Any, calls: _Calls, *, span: bool = True, callback: Any = None) -> Any:
    return make(
        OutputRecord, calls.produce, {"out"}, calls.enqueue, calls if span else None, callback
    )


def test_a_plain_output_goes_straight_to_produce_and_is_counted_in_the_emitter(
    make: Any,
) -> None:
    """Counted in ``emitted``, which the span reads (``count_from``): no call per output."""
    calls = _Calls()
    emit = _emit(make, calls)
    assert emit.emitted == 0
    assert emit(OutputRecord("out", b"v", b"k")) is None
    assert emit(OutputRecord("out", "välue", "kéy")) is None  # str: UTF-8, as confluent-kafka
    assert emit(OutputRecord("out", None)) is None
    assert calls.produced == [
        (("out", b"v", b"k"), {}),
        (("out", "välue".encode(), "kéy".encode()), {}),
        (("out", None, None), {}),
    ]
    assert emit.emitted == 3 and calls.added == 0 and calls.enqueued == []
    with pytest.raises(AttributeError):
        emit.emitted = 0  # read-only: the span's count must not go back


def test_a_delivery_callback_is_passed_when_one_is_given(make: Any) -> None:
    calls = _Calls()
    _emit(make, calls, callback=_callback)(OutputRecord("out", b"v"))
    assert calls.produced == [(("out", b"v", None, -1, _callback), {})]  # positional_produce


def test_without_a_span_the_emitter_still_counts(make: Any) -> None:
    calls = _Calls()
    emit = _emit(make, calls, span=False)
    emit(OutputRecord("out", b"v"))
    assert len(calls.produced) == 1 and emit.emitted == 1 and calls.added == 0


class _Sub(OutputRecord):
    pass


@pytest.mark.parametrize(
    "out",
    [
        OutputRecord("elsewhere", b"v"),  # a topic not seen before: the partitioner routes it
        OutputRecord("out", b"v", headers=[("h", b"1")]),
        OutputRecord("out", b"v", partition=3),
        ("out", b"v", None, None, None),  # not an OutputRecord: the general path says so
        ["out", b"v", None, None, None],
        "out",
    ],
    ids=["unknown-topic", "headers", "partition", "tuple", "list", "str"],
)
def test_any_other_output_takes_the_general_path(make: Any, out: Any) -> None:
    calls = _Calls()
    emit = _emit(make, calls)
    emit(out)
    assert calls.produced == [] and calls.added == 0 and emit.emitted == 0
    assert calls.enqueued == [(out, calls)]  # enqueue counts it on the span it is given


def test_a_refusal_from_produce_takes_the_general_path(make: Any) -> None:
    calls = _Calls(refuse=BufferError("Local: Queue full"))
    out = OutputRecord("out", b"v")
    emit = _emit(make, calls)
    emit(out)
    assert calls.enqueued == [(out, calls)] and calls.added == 0 and emit.emitted == 0


def test_an_interrupt_in_produce_propagates(make: Any) -> None:
    calls = _Calls(refuse=KeyboardInterrupt())
    with pytest.raises(KeyboardInterrupt):
        _emit(make, calls)(OutputRecord("out", b"v"))
    assert calls.enqueued == []


def test_what_enqueue_or_encoding_raise_propagates(make: Any) -> None:
    calls = _Calls()

    def enqueue(out: Any, span: Any) -> None:
        raise LookupError("general path failed")

    with pytest.raises(LookupError):
        make(OutputRecord, calls.produce, set(), enqueue, None, None)(OutputRecord("out", b"v"))
    with pytest.raises(UnicodeEncodeError):
        _emit(make, calls)(OutputRecord("out", "\udc80"))

    class Span:
        def add(self) -> None:
            raise RuntimeError("span")

    # the fast path never calls the span (it counts in itself)
    emit = make(OutputRecord, calls.produce, {"out"}, calls.enqueue, Span(), None)
    emit(OutputRecord("out", b"v"))
    assert emit.emitted == 1


def test_nothing_is_kept_after_an_output(make: Any) -> None:
    calls = _Calls()
    emit = _emit(make, calls)
    value, key = b"v" * 10, b"k" * 10
    out = OutputRecord("out", value, key)
    before = (sys.getrefcount(out), sys.getrefcount(value), sys.getrefcount(key))
    for _ in range(100):
        emit(out)
    calls.produced.clear()
    assert (sys.getrefcount(out), sys.getrefcount(value), sys.getrefcount(key)) == before


def test_the_general_path_refuses_what_is_not_an_output_record_and_says_what_it_got() -> None:
    """Since plain tuples are outputs too, what is refused is what is neither an OutputRecord
    nor a tuple of 2 to 5 of its fields starting with a topic name."""
    producer = Producer(ProducerProfile(guarantee="at_least_once", bootstrap_servers="x:1"))
    for bad, kind in [
        (["out", b"v"], "list"),
        (("out",), "tuple"),
        (("out", b"v", b"k", None, None, "extra"), "tuple"),
        ((b"out", b"v"), "tuple"),  # the topic first, as a str
        ({"topic": "out"}, "dict"),
    ]:
        with pytest.raises(TypeError, match=rf"must return OutputRecord\(topic, value.*got {kind}"):
            producer._output.produce(bad)  # type: ignore[arg-type]


def test_a_plain_tuple_of_topic_value_and_key_takes_the_same_fast_path(make: Any) -> None:
    """A handler may return ``(topic, value, key)`` or ``(topic, value)``: cheaper to build
    than an OutputRecord, queued the same way."""
    calls = _Calls()
    emit = _emit(make, calls)
    emit(("out", b"v", b"k"))
    emit(("out", "välue", "kéy"))
    emit(("out", b"v"))
    assert calls.produced == [
        (("out", b"v", b"k"), {}),
        (("out", "välue".encode(), "kéy".encode()), {}),
        (("out", b"v", None), {}),
    ]
    assert emit.emitted == 3 and calls.enqueued == []


def test_other_tuples_and_unknown_topics_take_the_general_path(make: Any) -> None:
    """Headers or a partition (a 4- or 5-tuple), a topic not seen yet, anything else: enqueue
    (which makes the OutputRecord, or refuses with a TypeError)."""
    calls = _Calls()
    emit = _emit(make, calls)
    four = ("out", b"v", b"k", [("h", b"1")])
    emit(four)
    emit(("new-topic", b"v", b"k"))
    emit(["out", b"v", b"k"])  # a list is not a record: the general path says so
    assert [out for out, _ in calls.enqueued] == [
        four,
        ("new-topic", b"v", b"k"),
        ["out", b"v", b"k"],
    ]
    assert calls.produced == [] and emit.emitted == 0
