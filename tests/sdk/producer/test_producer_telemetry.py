"""The SDK Producer's OpenTelemetry hooks on a real broker (in-memory SDK providers)."""

from __future__ import annotations

from typing import Any

import pytest

from sdk.observability._conventions import OUTCOME
from sdk.producer import Producer
from tests.sdk.observability._support import make_otel
from tests.sdk.producer._support import profile, read_all

pytestmark = pytest.mark.broker


def test_send_span_trace_headers_and_delivery_metrics(kafka_cluster: Any, make_topic: Any) -> None:
    otel = make_otel()
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(2)
    with Producer(profile(bs), telemetry=otel.telemetry) as producer:
        handle = producer.send(topic, b"traced", key=b"k1", headers=[("app", b"x")])
        meta = handle.result(30)
        assert handle.record.headers == [("app", b"x")]  # the caller's record is untouched
    spans = otel.spans(f"send {topic}")
    assert len(spans) == 1
    span = spans[0]
    assert span.attributes["messaging.system"] == "kafka"
    assert span.attributes["messaging.destination.name"] == topic
    (msg,) = read_all(bs, topic, 1)
    headers = dict(msg.headers())
    assert headers["app"] == b"x"
    trace_id = f"{span.context.trace_id:032x}"
    assert headers["traceparent"].decode().split("-")[1] == trace_id
    assert otel.total("messaging.client.sent.messages", {"messaging.destination.name": topic}) == 1
    assert meta.offset == msg.offset()
    assert (
        otel.total("kafka_semantics.producer.delivered", {"messaging.destination.name": topic}) == 1
    )


def test_transaction_spans_record_outcome(kafka_cluster: Any, make_topic: Any) -> None:
    otel = make_otel()
    topic = make_topic(1)
    with Producer(
        profile(kafka_cluster.bootstrap_servers, "exactly_once"), telemetry=otel.telemetry
    ) as p:
        with p.transaction():
            p.send(topic, b"1")
            p.send(topic, b"2")
        with pytest.raises(RuntimeError), p.transaction():
            p.send(topic, b"3")
            raise RuntimeError("abort me")
    txns = [s for s in otel.spans() if "transaction" in s.name]
    assert len(txns) == 2, [s.name for s in otel.spans()]
    assert [s.attributes[OUTCOME] for s in txns] == ["committed", "aborted"]


def test_telemetry_off_costs_nothing_and_records_nothing(
    kafka_cluster: Any, make_topic: Any
) -> None:
    otel = make_otel()
    topic = make_topic(1)
    with Producer(profile(kafka_cluster.bootstrap_servers), telemetry=False) as producer:
        producer.send_and_wait(topic, b"plain", timeout_s=30)
    assert otel.spans() == []
    (msg,) = read_all(kafka_cluster.bootstrap_servers, topic, 1)
    assert not msg.headers()
