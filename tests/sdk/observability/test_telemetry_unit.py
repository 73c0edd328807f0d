"""Unit tests of the Telemetry hooks with the OpenTelemetry SDK's in-memory exporters."""

from __future__ import annotations

import gc
import logging
import weakref
from dataclasses import dataclass
from typing import Any

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from sdk.errors import ConfigurationError
from sdk.observability import Telemetry, get_logger
from tests.sdk.observability._support import Otel, make_otel

TP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


@pytest.fixture
def otel() -> Otel:
    return make_otel()


@dataclass
class FakeMessage:
    _topic: str
    _partition: int
    _offset: int
    _headers: list[tuple[str, bytes]] | None

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def headers(self) -> list[tuple[str, bytes]] | None:
        return self._headers


def test_inject_replaces_traceparent_and_keeps_other_headers(otel: Otel) -> None:
    tel = otel.telemetry
    with tel.send_span("t") as span:
        out = tel.inject([("a", b"1"), ("traceparent", b"stale"), ("b", None)])
    names = [n for n, _ in out]
    assert names == ["a", "b", "traceparent"]
    value = dict(out)["traceparent"]
    assert isinstance(value, bytes)
    ctx = span.get_span_context()
    assert value.decode().split("-")[:3] == ["00", f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}"]
    # dict headers and None are accepted and copied, never mutated
    original = {"x": b"y"}
    assert [n for n, _ in tel.inject(original)] == ["x"]  # no active span: nothing added
    assert original == {"x": b"y"}
    assert tel.inject(None) == []


def test_extract_reads_bytes_and_str_headers(otel: Otel) -> None:
    from opentelemetry import trace

    tel = otel.telemetry
    for value in (TP.encode(), TP):
        ctx = trace.get_current_span(tel.extract([("TraceParent", value)])).get_span_context()
        assert ctx.trace_id == 0x0AF7651916CD43DD8448EB211C80319C and ctx.is_remote
    empty = trace.get_current_span(tel.extract([("traceparent", b"\xff\xfe")]))
    assert not empty.get_span_context().is_valid
    assert not trace.get_current_span(tel.extract(None)).get_span_context().is_valid


def test_send_span_attributes_and_sent_counter(otel: Otel) -> None:
    tel = otel.telemetry
    with tel.send_span("orders", partition=3, key=b"k1"):
        pass
    with tel.send_span("orders", partition=-1, key=b"\xff", tombstone=True):
        pass
    a, b = otel.spans("send orders")
    assert a.kind is SpanKind.PRODUCER
    assert dict(a.attributes or {}) == {
        "messaging.system": "kafka",
        "messaging.operation.type": "send",
        "messaging.operation.name": "send",
        "messaging.destination.name": "orders",
        "messaging.destination.partition.id": "3",
        "messaging.kafka.message.key": "k1",
    }
    attrs_b = dict(b.attributes or {})
    assert "messaging.kafka.message.key" not in attrs_b  # no canonical text form
    assert "messaging.destination.partition.id" not in attrs_b  # RD_KAFKA_PARTITION_UA
    assert attrs_b["messaging.kafka.message.tombstone"] is True
    assert (
        otel.total("messaging.client.sent.messages", {"messaging.destination.name": "orders"}) == 2
    )
    # keys never become metric attributes
    assert all(
        "messaging.kafka.message.key" not in p
        for p, _ in otel.points("messaging.client.sent.messages")
    )


def test_send_span_error_sets_error_type_and_does_not_count(otel: Otel) -> None:
    with pytest.raises(BufferError), otel.telemetry.send_span("t"):
        raise BufferError("queue full")
    (span,) = otel.spans()
    assert span.attributes is not None and span.attributes["error.type"] == "BufferError"
    assert span.status.status_code is StatusCode.ERROR
    assert otel.total("messaging.client.sent.messages") == 0


def test_record_keys_false_keeps_keys_off_spans() -> None:
    otel = make_otel(record_keys=False)
    with otel.telemetry.send_span("t", key="secret-customer-id"):
        pass
    with otel.telemetry.process_span("t", 0, 5, key="secret-customer-id"):
        pass
    for s in otel.spans():
        assert "secret-customer-id" not in str(dict(s.attributes or {}))


def test_process_span_is_parented_to_the_producer_context(otel: Otel) -> None:
    tel = otel.telemetry
    tx = tel.start_transaction("tid-1")
    with (
        tel.process_span(
            "in", 2, 41, key="k", group="g", headers=[("traceparent", TP.encode())], transaction=tx
        ) as span,
        tel.send_span("out", key="k"),
    ):
        headers = tel.inject()
    tx.end("committed", records=1, input_records=1)
    proc = otel.spans("process in")[0]
    send = otel.spans("send out")[0]
    assert span.get_span_context().trace_id == 0x0AF7651916CD43DD8448EB211C80319C
    assert proc.kind is SpanKind.CONSUMER
    assert proc.parent is not None and proc.parent.span_id == 0xB7AD6B7169203331
    assert send.parent is not None and send.parent.span_id == proc.context.span_id
    assert dict(headers)["traceparent"].decode().split("-")[1] == f"{proc.context.trace_id:032x}"
    assert [lk.context.span_id for lk in proc.links] == [tx.span_context.span_id]
    attrs = dict(proc.attributes or {})
    assert attrs["messaging.kafka.offset"] == 41
    assert attrs["messaging.destination.partition.id"] == "2"
    assert attrs["messaging.consumer.group.name"] == "g"
    assert attrs["messaging.operation.type"] == "process"
    match = {"messaging.destination.name": "in", "messaging.destination.partition.id": "2"}
    assert otel.total("messaging.process.duration", match) == 1
    assert otel.total("messaging.client.consumed.messages", match) == 1


def test_process_span_link_mode_starts_its_own_trace() -> None:
    otel = make_otel(parent_from_headers=False)
    with otel.telemetry.process_span("in", 0, 1, headers=[("traceparent", TP.encode())]):
        pass
    (proc,) = otel.spans()
    assert proc.parent is None
    assert proc.context.trace_id != 0x0AF7651916CD43DD8448EB211C80319C
    assert [lk.context.trace_id for lk in proc.links] == [0x0AF7651916CD43DD8448EB211C80319C]


def test_process_span_without_context_joins_the_current_span(otel: Otel) -> None:
    tracer = otel.tracer_provider.get_tracer("test")
    with (
        tracer.start_as_current_span("outer") as outer,
        otel.telemetry.process_span("in", 0, 1, headers=[("other", b"x")]),
    ):
        pass
    proc = otel.spans("process in")[0]
    assert proc.parent is not None and proc.parent.span_id == outer.get_span_context().span_id


def test_process_span_failure_records_error_type_in_latency(otel: Otel) -> None:
    with pytest.raises(KeyError), otel.telemetry.process_span("in", 0, 1):
        raise KeyError("x")
    assert otel.total("messaging.process.duration", {"error.type": "KeyError"}) == 1
    (proc,) = otel.spans()
    assert proc.status.status_code is StatusCode.ERROR


def test_batch_process_span_links_every_record(otel: Otel) -> None:
    tel = otel.telemetry
    tracer = otel.tracer_provider.get_tracer("test")
    records = []
    for i in range(3):
        with tracer.start_as_current_span(f"producer-{i}"):
            records.append(FakeMessage("in", 0, i, tel.inject()))
    records.append(FakeMessage("in", 1, 0, None))
    with tel.batch_process_span(records, group="g"):
        pass
    (batch,) = otel.spans("process in")
    assert dict(batch.attributes or {})["messaging.batch.message_count"] == 4
    producers = {s.context.span_id for s in otel.spans() if s.name.startswith("producer-")}
    assert {lk.context.span_id for lk in batch.links} == producers
    assert otel.total("messaging.client.consumed.messages") == 4
    assert otel.total("messaging.process.duration") == 1


def test_transaction_span_outcomes_and_metrics(otel: Otel) -> None:
    tel = otel.telemetry
    tx = tel.start_transaction("tid")
    tx.add(3)
    tx.add_input(2)
    tx.end("committed")
    tx.end("aborted")  # ignored: already ended
    aborted = tel.start_transaction("tid")
    aborted.end("aborted", records=1, error=RuntimeError("boom"))
    committed, ab = otel.spans("kafka.transaction")
    assert dict(committed.attributes or {}) == {
        "messaging.system": "kafka",
        "kafka_semantics.transactional_id": "tid",
        "kafka_semantics.transaction.outcome": "committed",
        "messaging.batch.message_count": 3,
        "kafka_semantics.transaction.input_records": 2,
    }
    assert committed.status.status_code is StatusCode.UNSET
    assert ab.status.status_code is StatusCode.ERROR
    assert dict(ab.attributes or {})["error.type"] == "RuntimeError"
    key = "kafka_semantics.transaction.outcome"
    assert otel.total("kafka_semantics.transactions", {key: "committed"}) == 1
    assert otel.total("kafka_semantics.transactions", {key: "aborted"}) == 1
    assert otel.total("kafka_semantics.transaction.duration") == 2
    with pytest.raises(ValueError, match="valid: committed, aborted, unknown"):
        tel.start_transaction("x").end("maybe")  # type: ignore[arg-type]


class _Counter:
    """What a span counts from: the Processor's emitter (its ``emitted``; it holds the span)."""

    def __init__(self, span: Any = None) -> None:
        self.emitted = 0
        self.span = span


def test_transaction_span_adds_what_its_emitters_counted(otel: Otel) -> None:
    tel = otel.telemetry
    tx = tel.start_transaction("tid")
    first, second = _Counter(), _Counter()
    tx.count_from(first)
    tx.count_from(second)
    tx.add(2)  # the general path's
    first.emitted, second.emitted = 5, 4  # counted after they were handed over
    assert tx.records == 11
    tx.end("committed")
    first.emitted = 100  # counted at the end: later counts are not the transaction's
    assert tx.records == 11
    overridden = tel.start_transaction("tid")
    overridden.count_from(first)
    overridden.end("aborted", records=1)  # an explicit count replaces what was counted
    committed, aborted = otel.spans("kafka.transaction")
    assert dict(committed.attributes or {})["messaging.batch.message_count"] == 11
    assert dict(aborted.attributes or {})["messaging.batch.message_count"] == 1


def test_an_ended_transaction_span_lets_go_of_its_emitters(otel: Otel) -> None:
    """An emitter holds its span: kept after the end, the two would wait for the collector."""
    tx = otel.telemetry.start_transaction("tid")
    tx.count_from(_Counter(span=tx))
    tx.end("committed")
    gone = weakref.ref(tx)
    gc.disable()  # freed by reference counting alone, not by a collection
    try:
        del tx
        assert gone() is None
    finally:
        gc.enable()


def test_transaction_context_manager(otel: Otel) -> None:
    tel = otel.telemetry
    with tel.transaction_span("tid") as tx:
        with tel.send_span("out"):
            pass
        tx.set_outcome("committed", records=1)
    with pytest.raises(RuntimeError), tel.transaction_span("tid"):
        raise RuntimeError("x")
    first, second = otel.spans("kafka.transaction")
    (send,) = otel.spans("send out")
    assert send.parent is not None and send.parent.span_id == first.context.span_id
    assert dict(second.attributes or {})["kafka_semantics.transaction.outcome"] == "unknown"


def test_other_counters(otel: Otel, caplog: pytest.LogCaptureFixture) -> None:
    tel = otel.telemetry
    tel.delivered("t", 0, 0.004)
    tel.delivered("t", 1, 0.002)
    tel.delivery_failed("t", "MSG_SIZE_TOO_LARGE", partition=0)
    tel.retry("commit_transaction")
    tel.retry("commit_transaction")
    tel.dead_lettered("in", "in.dlq", 2)
    with otel.tracer_provider.get_tracer("t").start_as_current_span("handling"):
        tel.dead_lettered("in", "in.dlq", 1, error_type="KeyError")
    (handling,) = otel.spans("handling")
    assert [(e.name, dict(e.attributes or {})) for e in handling.events] == [
        (
            "kafka_semantics.dead_lettered",
            {"kafka_semantics.dlq.topic": "in.dlq", "error.type": "KeyError"},
        )
    ]
    with caplog.at_level(logging.INFO, logger="sdk.observability"):
        tel.rebalance("assigned", 4)
        tel.rebalance("revoked", 4)
    with pytest.raises(ConfigurationError, match="assigned, revoked, lost"):
        tel.rebalance("moved")  # type: ignore[arg-type]
    assert otel.total("kafka_semantics.producer.delivered") == 2
    assert otel.total("kafka_semantics.producer.delivery.duration") == 2
    sums = [p.sum for _, p in otel.points("kafka_semantics.producer.delivery.duration")]
    assert sum(sums) == pytest.approx(0.006)
    assert (
        otel.total("kafka_semantics.producer.delivery_failed", {"error.type": "MSG_SIZE_TOO_LARGE"})
        == 1
    )
    assert (
        otel.total(
            "kafka_semantics.retries", {"kafka_semantics.retry.operation": "commit_transaction"}
        )
        == 2
    )
    assert otel.total("kafka_semantics.dead_lettered", {"kafka_semantics.dlq.topic": "in.dlq"}) == 3
    assert (
        otel.total("kafka_semantics.rebalances", {"kafka_semantics.rebalance.kind": "assigned"})
        == 1
    )
    assert [r.getMessage() for r in caplog.records] == [
        "rebalance: assigned 4 partitions",
        "rebalance: revoked 4 partitions",
    ]
    assert caplog.records[0].name == "sdk.observability"
    assert caplog.records[0].rebalance == "assigned"


def test_safeguards_are_counted_and_logged_as_warnings(
    otel: Otel, caplog: pytest.LogCaptureFixture
) -> None:
    tel = otel.telemetry
    with caplog.at_level(logging.WARNING, logger="sdk.observability"):
        tel.safeguard("unowned_batch", "commit: group session lost")
        tel.safeguard("stalled_call", "send_offsets_to_transaction did not return")
        tel.safeguard("unowned_batch")
    with pytest.raises(ConfigurationError, match="unowned_batch, redelivered, stalled_call"):
        tel.safeguard("other")  # type: ignore[arg-type]
    assert (
        otel.total("kafka_semantics.safeguards", {"kafka_semantics.safeguard": "unowned_batch"})
        == 2
    )
    assert (
        otel.total("kafka_semantics.safeguards", {"kafka_semantics.safeguard": "stalled_call"}) == 1
    )
    assert [r.levelname for r in caplog.records] == ["WARNING"] * 3
    assert caplog.records[0].getMessage() == "safeguard unowned_batch: commit: group session lost"
    assert caplog.records[1].safeguard == "stalled_call"


def test_get_logger_refuses_names_outside_sdk() -> None:
    assert get_logger("sdk.processor").name == "sdk.processor"
    with pytest.raises(ValueError, match=r"under .sdk\."):
        get_logger("kafka")


def test_default_is_one_instance() -> None:
    assert Telemetry.default() is Telemetry.default()


def test_metrics_only_sdk_counts_without_spans_and_still_carries_context() -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.trace import NoOpTracerProvider

    reader = InMemoryMetricReader()
    tel = Telemetry(tracer_provider=NoOpTracerProvider(), meter_provider=MeterProvider([reader]))
    assert not tel.tracing_enabled() and tel.metrics_enabled()
    with tel.process_span("in", 1, 7, headers=[("traceparent", TP.encode()), ("x", b"1")]) as span:
        with tel.send_span("out", 0):
            headers = tel.inject([("traceparent", b"stale")])
        assert not span.get_span_context().is_valid
    with pytest.raises(ValueError), tel.process_span("in", 1, 8):
        raise ValueError
    with pytest.raises(ValueError), tel.send_span("out", 0):
        raise ValueError
    assert headers == [("traceparent", TP.encode())]  # the input's, copied as-is
    assert tel.inject([("a", b"1")]) == [("a", b"1")]  # outside: nothing to carry
    otel = Otel(tel, None, reader, None)  # type: ignore[arg-type]
    assert otel.total("messaging.client.sent.messages") == 1  # the failed send is not counted
    assert otel.total("messaging.process.duration", {"error.type": "ValueError"}) == 1
    assert otel.total("messaging.client.consumed.messages") == 2


def test_tracing_only_sdk_leaves_instruments_alone() -> None:
    from opentelemetry.metrics import NoOpMeterProvider

    otel = make_otel()
    tel = Telemetry(tracer_provider=otel.tracer_provider, meter_provider=NoOpMeterProvider())
    assert tel.tracing_enabled() and not tel.metrics_enabled()
    with tel.process_span("in", 0, 1), tel.send_span("out"):
        pass
    tx = tel.start_transaction("t")
    tx.end("committed")
    assert sorted(s.name for s in otel.spans()) == ["kafka.transaction", "process in", "send out"]
