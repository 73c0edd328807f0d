"""librdkafka statistics parsing, secret redaction, and the no-op path without an SDK."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
import time

import pytest
from pydantic import SecretStr

from sdk.observability import PartitionLag, consumer_lag, redact
from sdk.observability._logging import is_secret_key
from sdk.observability._stats import LagTable
from tests.sdk.observability._support import make_otel

# The shape librdkafka 2.x emits (trimmed): the "-1" partition is the internal UA partition.
STATS = {
    "name": "rdkafka#consumer-1",
    "type": "consumer",
    "topics": {
        "orders": {
            "topic": "orders",
            "partitions": {
                "0": {"partition": 0, "consumer_lag": 7, "hi_offset": 10, "committed_offset": 3},
                "1": {"partition": 1, "consumer_lag": -1, "hi_offset": 4},
                # a transactional processor: committed_offset stays unknown, app_offset moves
                "3": {
                    "partition": 3,
                    "consumer_lag": -1,
                    "hi_offset": 12,
                    "ls_offset": 11,
                    "committed_offset": -1001,
                    "app_offset": 5,
                },
                "-1": {"partition": -1, "consumer_lag": -1},
            },
        },
        "audit": {"partitions": {"2": {"partition": 2, "consumer_lag": 0}}},
    },
}


def test_consumer_lag_keeps_known_lags_only() -> None:
    assert consumer_lag(STATS, group="g") == [
        PartitionLag("audit", 2, 0, "g"),
        PartitionLag("orders", 0, 7, "g"),
        PartitionLag("orders", 3, 6, "g"),
    ]
    assert consumer_lag({"topics": "garbage"}) == []
    assert consumer_lag({"topics": {"t": {"partitions": {"0": {"consumer_lag": "x"}}}}}) == []
    # only consumer_lag known: it is used as is
    assert consumer_lag({"topics": {"t": {"partitions": {"0": {"consumer_lag": 4}}}}}) == [
        PartitionLag("t", 0, 4)
    ]


def test_lag_gauge_reports_latest_statistics_per_client() -> None:
    otel = make_otel()
    tel = otel.telemetry
    tel.record_stats(json.dumps(STATS), group="g")
    other = dict(
        STATS,
        name="rdkafka#consumer-2",
        topics={"orders": {"partitions": {"0": {"partition": 0, "consumer_lag": 9}}}},
    )
    tel.record_stats(json.dumps(other), group="g")
    points = {
        (a["messaging.destination.name"], a["messaging.destination.partition.id"]): p.value
        for a, p in otel.points("kafka_semantics.consumer.lag")
    }
    assert points == {("orders", "0"): 9, ("orders", "3"): 6, ("audit", "2"): 0}
    # a newer document from client 2 replaces its earlier one
    other["topics"] = {"orders": {"partitions": {"0": {"partition": 0, "consumer_lag": 1}}}}
    tel.stats_callback(group="g")(json.dumps(other))
    assert [(p.topic, p.lag) for p in tel.lag()] == [("audit", 0), ("orders", 7), ("orders", 6)]


def test_lag_table_expires_silent_clients() -> None:
    table = LagTable(ttl_s=0.05)
    table.update(json.dumps(STATS))
    assert len(list(table.current())) == 3
    time.sleep(0.1)
    assert list(table.current()) == []


def test_malformed_statistics_are_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    tel = make_otel().telemetry
    with caplog.at_level(logging.WARNING, logger="sdk.observability"):
        tel.record_stats("{not json")
        tel.record_stats("[1, 2]")
    assert len(caplog.records) == 2
    assert tel.lag() == []


def test_redact_hides_secrets() -> None:
    config = {
        "bootstrap.servers": "b:9092",
        "sasl.username": "svc",
        "sasl.password": "hunter2",
        "ssl.key.password": "pw",
        "ssl.key.pem": "-----BEGIN",
        "sasl.oauthbearer.config": "principal=x secret=y",
        "custom": SecretStr("s3"),
        "stats_cb": len,
    }
    out = redact(config)
    assert out == {
        "bootstrap.servers": "b:9092",
        "sasl.username": "svc",
        "sasl.password": "***",
        "ssl.key.password": "***",
        "ssl.key.pem": "***",
        "sasl.oauthbearer.config": "***",
        "custom": "***",
        "stats_cb": "<len>",
    }
    assert config["sasl.password"] == "hunter2"  # a copy
    assert is_secret_key("SASL.PASSWORD") and not is_secret_key("sasl.mechanism")


def test_no_sdk_installed_is_a_silent_no_op_that_still_propagates() -> None:
    """Fresh interpreter, global providers untouched: no exception, no recording, context kept."""
    code = textwrap.dedent(
        """
        import json
        from opentelemetry import trace
        from sdk.observability import Telemetry
        tel = Telemetry.default()
        tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
        tx = tel.start_transaction("tid")
        hs = [("traceparent", tp.encode())]
        with tel.process_span("in", 0, 1, b"k", "g", hs, transaction=tx) as p:
            with tel.send_span("out", 0, b"k") as s:
                headers = tel.inject([("a", b"1")])
        tx.end("aborted", error=RuntimeError("x"))
        with tel.transaction_span("tid") as t:
            t.set_outcome("committed", records=1)
        tel.delivered("out", 0, 0.001); tel.delivery_failed("out", "X"); tel.retry("x")
        tel.dead_lettered("in", "dlq"); tel.rebalance("lost"); tel.record_stats("{}")
        result = {
            "recording": [p.is_recording(), s.is_recording(), tx.span.is_recording()],
            "provider": type(trace.get_tracer_provider()).__name__,
            "headers": [[n, v.decode()] for n, v in headers],
        }
        # an SDK installed later is picked up by the same (default) instance within a second
        import time
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        time.sleep(1.1)
        with Telemetry.default().process_span("in", 0, 2, None, "g", hs):
            pass
        result["later"] = [
            [sp.name, format(sp.context.trace_id, "032x")] for sp in exporter.get_finished_spans()
        ]
        print(json.dumps(result))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    result = json.loads(out.stdout)
    assert result["recording"] == [False, False, False]
    assert result["provider"] == "ProxyTracerProvider"
    # the input record's trace context reaches the output record unchanged
    assert result["headers"] == [
        ["a", "1"],
        ["traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"],
    ]
    assert out.stderr == ""
    assert result["later"] == [["process in", "0af7651916cd43dd8448eb211c80319c"]]
