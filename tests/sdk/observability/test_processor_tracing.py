"""Real-broker tests: one trace from a producer through the Processor to a consumer; aborts."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from sdk.errors import HandlerError
from sdk.processor import OutputRecord, Processor
from sdk.profiles import ProcessingProfile
from tests.sdk.observability._render import render_tree
from tests.sdk.observability._support import Otel, make_otel
from tests.sdk.processor._support import committed_total

pytestmark = pytest.mark.broker

SECRET = "pw-hunter2-never-logged"


def profile(
    bs: str, group: str, failure: dict[str, Any], commit_ms: int = 100, **security: Any
) -> ProcessingProfile:
    return ProcessingProfile(
        guarantee="exactly_once",
        consumer={
            "guarantee": "exactly_once",
            "bootstrap_servers": bs,
            "group_id": group,
            "session_timeout_ms": 6000,
            "failure": failure,
            "security": security,
            "extras": {"statistics.interval.ms": 200},
        },
        producer={
            "guarantee": "exactly_once",
            "bootstrap_servers": bs,
            "transactional_id_prefix": f"{group}-",
            "security": security,
        },
        commit_interval_ms=commit_ms,
    )


def produce_traced(otel: Otel, bs: str, topic: str, values: list[str]) -> dict[str, Any]:
    """Raw confluent-kafka producer; each record carries the traceparent of its send span."""
    tel = otel.telemetry
    p = Producer({"bootstrap.servers": bs})
    spans = {}
    for i, value in enumerate(values):
        with tel.send_span(topic, key=f"k{i}") as span:
            p.produce(topic, key=f"k{i}", value=value, headers=tel.inject([("app", b"demo")]))
        spans[value] = span.get_span_context()
    assert p.flush(30) == 0
    return spans


def run_until(
    proc: Processor,
    handler: Any,
    done: Callable[[], bool],
    timeout: float = 150,
    *,
    batch: bool = False,
) -> dict[str, Any]:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["stats"] = proc.run_batch(handler) if batch else proc.run(handler)
        except BaseException as exc:
            box["error"] = exc

    t = threading.Thread(target=target)
    t.start()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and t.is_alive() and not done():
            time.sleep(0.1)
    finally:
        proc.stop()
        t.join(60)
    return box


def read_all(bs: str, topic: str, partitions: int, count: int) -> list[Any]:
    c = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": "reader",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list[Any] = []
    deadline = time.monotonic() + 30
    try:
        while len(out) < count and time.monotonic() < deadline:
            out += [m for m in c.consume(10, 0.5) if m.error() is None]
    finally:
        c.close()
    assert len(out) == count, f"read {len(out)} of {count} from {topic}"
    return out


def traceparent(record: Any) -> tuple[int, int]:
    value = dict(record.headers())["traceparent"].decode()
    _, trace_id, span_id, _ = value.split("-")
    return int(trace_id, 16), int(span_id, 16)


def test_one_trace_from_producer_through_processor_to_consumer(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, dlq, group = make_topic(2), make_topic(2), make_topic(1), make_group()
    otel = make_otel()
    tel = otel.telemetry
    values = ["a", "b", "bad", "c"]
    sent = produce_traced(otel, bs, src, values)

    def handler(r: Any) -> list[OutputRecord]:
        if r.value == b"bad":
            raise ValueError("cannot handle 'bad'")
        # the handler copies the input headers: the processor must replace their traceparent
        return [OutputRecord(dst, r.value.upper(), key=r.key, headers=r.headers)]

    failure = {"attempts": 2, "backoff_initial_ms": 10, "backoff_max_ms": 10}
    failure |= {"on_failure": "dlq", "dlq_topic": dlq}
    proc = Processor(profile(bs, group, failure), [src], instance_id="i", telemetry=tel)

    def done() -> bool:
        lags = [p for p in tel.lag() if p.topic == src]
        return (
            committed_total(bs, group, src, 2) >= 4 and bool(lags) and all(p.lag == 0 for p in lags)
        )

    # returns as soon as done(); on a cold cluster the first group creates __consumer_offsets
    # and __transaction_state, which took over 60 s once under load
    box = run_until(proc, handler, done)
    assert done(), (
        "the processor did not finish, or the lag gauge never reached 0: committed "
        f"{committed_total(bs, group, src, 2)} of 4, lags {list(tel.lag())}, run {box}, "
        f"stats {proc.stats}"
    )
    assert "error" not in box, box
    outputs = read_all(bs, dst, 2, 3)
    (dead,) = read_all(bs, dlq, 1, 1)
    for m in outputs:  # a downstream consumer continues the trace from the output headers
        with tel.process_span(m.topic(), m.partition(), m.offset(), m.key(), "down", m.headers()):
            pass

    by_id = {s.context.span_id: s for s in otel.spans()}
    process = {s.attributes["messaging.kafka.offset"]: s for s in otel.spans(f"process {src}")}
    assert len(process) == 4
    committed_tx = {
        s.context.span_id
        for s in otel.spans("kafka.transaction")
        if s.attributes["kafka_semantics.transaction.outcome"] == "committed"
    }
    for out in outputs:
        value = out.value().decode().lower()
        origin = sent[value]
        trace_id, send_id = traceparent(out)
        assert trace_id == origin.trace_id  # the output carries the producer's trace
        send = by_id[send_id]  # ... and the span id of the processor's send span
        assert send.name == f"send {dst}"
        proc_span = by_id[send.parent.span_id]
        assert proc_span.name == f"process {src}"
        assert proc_span.parent.span_id == origin.span_id
        assert proc_span.attributes["messaging.consumer.group.name"] == group
        assert proc_span.attributes["messaging.kafka.message.key"] == out.key().decode()
        assert {lk.context.span_id for lk in proc_span.links} <= committed_tx
        (down,) = [
            s
            for s in otel.spans(f"process {dst}")
            if s.attributes["messaging.kafka.offset"] == out.offset()
            and s.attributes["messaging.destination.partition.id"] == str(out.partition())
        ]
        assert down.context.trace_id == origin.trace_id and down.parent.span_id == send_id
    # the dead-lettered record keeps its trace too
    assert traceparent(dead)[0] == sent["bad"].trace_id
    dlq_send = by_id[traceparent(dead)[1]]
    assert dlq_send.name == f"send {dlq}"
    events = by_id[dlq_send.parent.span_id].events
    assert [(e.name, dict(e.attributes or {})) for e in events] == [
        (
            "kafka_semantics.dead_lettered",
            {"kafka_semantics.dlq.topic": dlq, "error.type": "ValueError"},
        )
    ]

    tx_spans = otel.spans("kafka.transaction")
    outcomes = [s.attributes["kafka_semantics.transaction.outcome"] for s in tx_spans]
    assert outcomes == ["committed"] * len(tx_spans)
    assert sum(s.attributes["messaging.batch.message_count"] for s in tx_spans) == 4
    assert sum(s.attributes["kafka_semantics.transaction.input_records"] for s in tx_spans) == 4

    stats = proc.stats
    outcome = "kafka_semantics.transaction.outcome"
    dest = "messaging.destination.name"
    assert otel.total("kafka_semantics.transactions", {outcome: "committed"}) == stats.commits
    assert otel.total("kafka_semantics.transactions", {outcome: "aborted"}) == 0
    assert otel.total("messaging.client.consumed.messages", {dest: src}) == 4
    assert otel.total("messaging.client.consumed.messages", {dest: dst}) == 3
    assert otel.total("messaging.process.duration", {dest: src}) == 4
    assert otel.total("messaging.client.sent.messages", {dest: src}) == 4
    assert otel.total("messaging.client.sent.messages", {dest: dst}) == 3
    assert otel.total("messaging.client.sent.messages", {dest: dlq}) == 1
    assert otel.total("kafka_semantics.dead_lettered", {dest: src}) == 1 == stats.dead_lettered
    assert (
        otel.total("kafka_semantics.retries", {"kafka_semantics.retry.operation": "handler"}) == 1
    )
    kind = "kafka_semantics.rebalance.kind"
    assert otel.total("kafka_semantics.rebalances", {kind: "assigned"}) >= 1
    lag = {
        a["messaging.destination.partition.id"]: p.value
        for a, p in otel.points("kafka_semantics.consumer.lag")
        if a[dest] == src
    }
    assert lag and set(lag.values()) == {0}
    print("\n" + render_tree(otel.spans(), sent["a"].trace_id))
    print(render_tree(otel.spans(), sent["bad"].trace_id))


def test_aborted_transaction_is_recorded_and_no_secret_leaks(
    kafka_cluster: Any, make_topic: Any, make_group: Any, caplog: pytest.LogCaptureFixture
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(1), make_topic(1), make_group()
    otel = make_otel()
    sent = produce_traced(otel, bs, src, ["x", "boom"])

    def handler(r: Any) -> list[OutputRecord]:
        if r.value == b"boom":
            raise RuntimeError("handler refuses")
        return [OutputRecord(dst, r.value, key=r.key)]

    security = {"sasl_mechanism": "PLAIN", "sasl_username": "svc", "sasl_password": SECRET}
    # a long commit interval: "x" and "boom" are in one transaction, which the failure aborts
    prof = profile(bs, group, {"attempts": 1, "on_failure": "stop"}, 30_000, **security)
    proc = Processor(prof, [src], instance_id="i", telemetry=otel.telemetry)
    with caplog.at_level(logging.DEBUG):
        box = run_until(proc, handler, lambda: False, timeout=30)
    assert isinstance(box.get("error"), HandlerError), box

    (tx,) = otel.spans("kafka.transaction")
    attrs = dict(tx.attributes or {})
    assert attrs["kafka_semantics.transaction.outcome"] == "aborted"
    assert attrs["error.type"] == "HandlerError"
    assert attrs["messaging.batch.message_count"] == 1  # "x" was produced, then aborted
    assert tx.status.status_code.name == "ERROR"
    outcome = "kafka_semantics.transaction.outcome"
    assert (
        otel.total("kafka_semantics.transactions", {outcome: "aborted"}) == 1 == proc.stats.aborts
    )
    assert otel.total("kafka_semantics.transactions", {outcome: "committed"}) == 0
    boom = [s for s in otel.spans(f"process {src}") if s.attributes.get("error.type")]
    assert [s.attributes["error.type"] for s in boom] == ["HandlerError"]
    assert any(r.getMessage().startswith("transaction aborted") for r in caplog.records)
    processor_logs = [r.getMessage() for r in caplog.records if r.name == "sdk.processor"]
    assert any(m.startswith("handler failed, stopping") for m in processor_logs), processor_logs
    print("\n" + render_tree(otel.spans(), sent["boom"].trace_id))

    # the secret is nowhere: spans (attributes, events), metric attributes, log records
    redacted = [r for r in caplog.records if hasattr(r, "consumer_config")]
    assert redacted, "the processor logs its (redacted) configuration at start"
    assert redacted[0].consumer_config["sasl.password"] == "***"
    assert redacted[0].producer_config["sasl.password"] == "***"
    for span in otel.spans():
        assert SECRET not in repr(dict(span.attributes or {}))
        assert SECRET not in repr([dict(e.attributes or {}) for e in span.events])
    data = otel.reader.get_metrics_data()
    assert data is not None and SECRET not in data.to_json()
    for record in caplog.records:
        assert SECRET not in record.getMessage()
        assert SECRET not in repr(record.__dict__)


def test_batch_handler_gets_one_span_per_batch_linking_every_input(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(1), make_topic(1), make_group()
    otel = make_otel()
    sent = produce_traced(otel, bs, src, ["a", "b", "c"])

    def batch(records: list[Any]) -> list[OutputRecord]:
        return [OutputRecord(dst, r.value, key=r.key) for r in records]

    proc = Processor(profile(bs, group, {}), [src], instance_id="i", telemetry=otel.telemetry)
    box = run_until(proc, batch, lambda: committed_total(bs, group, src, 1) >= 3, batch=True)
    assert "error" not in box, box
    outputs = read_all(bs, dst, 1, 3)
    batches = otel.spans(f"process {src}")
    assert sum(s.attributes["messaging.batch.message_count"] for s in batches) == 3
    linked = {lk.context.span_id for s in batches for lk in s.links}
    assert {ctx.span_id for ctx in sent.values()} <= linked  # every input's producer span
    by_id = {s.context.span_id: s for s in otel.spans()}
    for out in outputs:  # outputs are children of their batch span (a trace of its own)
        trace_id, send_id = traceparent(out)
        batch_span = by_id[by_id[send_id].parent.span_id]
        assert batch_span in batches and batch_span.context.trace_id == trace_id
        assert batch_span.parent is None
