"""The Processor and the schema registry, with fake clients: outages waited for, bad outputs abort.

A real registry and broker run the same cases in tests/sdk/schemas/test_registry_processor.py;
here the serializers and deserializers are plain functions that report an outage (or fail) on
cue, so each path is shown in well under a second: an input whose registry does not answer is
retried and a stop ends that wait at once with nothing committed; an output whose registry does
not answer is retried and produced once; an output that cannot be serialized aborts the
transaction (nothing of it committed) and stops the run with ``SerializationError``.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from sdk.errors import SchemaRegistryUnavailableError, SerializationError
from sdk.processor import OutputRecord, Processor
from sdk.testing.fakes import FakeConsumerClient, FakeMessage, FakeProducerFactory
from tests.sdk.processor.test_recovery_unit import profile

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _processor(
    n: int, factory: FakeProducerFactory, **serdes: Any
) -> tuple[Processor, FakeConsumerClient]:
    offsets: dict[tuple[str, int], int] = {}
    consumer = FakeConsumerClient(
        [FakeMessage("in", 0, i, str(i).encode(), key=b"k") for i in range(n)],
        assign_on_subscribe=[("in", 0)],
        group_offsets=offsets,
        topic_in_logs=False,
    )
    proc = Processor(
        profile(),
        ["in"],
        instance_id="i1",
        producer_factory=lambda c: factory(c, group_offsets=offsets),
        consumer_factory=lambda c: consumer,
        **serdes,
    )
    return proc, consumer


def _down(data: Any, ctx: Any) -> Any:
    raise SchemaRegistryUnavailableError("registry down", url="http://registry:8081")


def test_a_stop_while_an_input_waits_for_the_registry_returns_at_once_committing_nothing() -> None:
    factory = FakeProducerFactory()
    proc, consumer = _processor(3, factory, value_deserializer=_down)
    threading.Timer(0.5, proc.stop).start()
    started = time.monotonic()
    stats = proc.run(lambda r: [OutputRecord("out", r.value)], max_duration_s=30)
    took = time.monotonic() - started
    assert took < 5  # the stop, not the 60 s registry_timeout_s nor max_duration_s
    assert stats.registry_retries >= 1
    assert (stats.records_in, stats.deserialization_failures, stats.dead_lettered) == (0, 0, 0)
    assert [v for p in factory.instances for v in p.committed] == []
    assert consumer.group_offsets.get(("in", 0)) in (None, 0)  # nothing past the record


def test_an_output_whose_registry_does_not_answer_is_retried_and_produced_once() -> None:
    outages = [2]

    def serialize(obj: Any, ctx: Any) -> bytes:
        if outages[0]:
            outages[0] -= 1
            raise SchemaRegistryUnavailableError("registry down", url="http://registry:8081")
        return json.dumps(obj).encode()

    factory = FakeProducerFactory()
    proc, consumer = _processor(4, factory, value_serializer=serialize)
    stats = proc.run(lambda r: [OutputRecord("out", {"n": int(r.value)})], max_duration_s=4)
    assert stats.registry_retries == 2
    committed = [v for p in factory.instances for v in p.committed]
    assert committed == [json.dumps({"n": i}).encode() for i in range(4)]  # each once, in order
    assert consumer.group_offsets[("in", 0)] == 4


def test_an_output_that_cannot_be_serialized_aborts_the_transaction_and_stops() -> None:
    def serialize(obj: Any, ctx: Any) -> bytes:
        if obj["n"] == 2:
            raise ValueError("n=2 does not fit the schema")
        return json.dumps(obj).encode()

    factory = FakeProducerFactory()
    proc, consumer = _processor(4, factory, value_serializer=serialize)
    with pytest.raises(SerializationError) as info:
        proc.run(lambda r: [OutputRecord("out", {"n": int(r.value)})], max_duration_s=10)
    assert "value" in str(info.value) and "n=2 does not fit" in str(info.value)
    # outputs 0 and 1 were queued in the same transaction: aborted with it, none visible
    assert [v for p in factory.instances for v in p.committed] == []
    assert any("abort_transaction" in p.calls for p in factory.instances)
    assert consumer.group_offsets.get(("in", 0)) in (None, 0)


def test_a_str_value_reaches_a_json_serializer_as_a_str() -> None:
    factory = FakeProducerFactory()
    proc, _ = _processor(2, factory, value_serializer="json", key_serializer="str")
    proc.run(lambda r: [OutputRecord("out", r.value.decode(), key="k")], max_duration_s=3)
    produced = [(m.key(), m.value()) for p in factory.instances for m in p.produced]
    assert produced == [(b"k", b'"0"'), (b"k", b'"1"')]
