"""The queue consumer's OpenTelemetry output on a real broker: spans and metrics.

Records are produced by a raw confluent-kafka producer carrying the traceparent of a send span,
as in the Processor's tracing test; the queue consumer must continue those traces and count
its retries and dead letters on the same instruments as the Consumer.
"""

from __future__ import annotations

from typing import Any

import pytest

from sdk.queue import QueueConsumer
from sdk.records import ConsumerRecord
from tests.sdk.consumer._support import read_topic
from tests.sdk.observability._support import make_otel
from tests.sdk.observability.test_processor_tracing import produce_traced
from tests.sdk.queue._support import queue_profile

pytestmark = pytest.mark.broker


def test_each_handling_is_a_process_span_in_the_producers_trace_and_failures_are_counted(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, dlq, group = make_topic(1), make_topic(1), make_group()
    otel = make_otel()
    values = ["a", "b", "bad", "c"]
    sent = produce_traced(otel, bs, topic, values)

    def handler(record: ConsumerRecord) -> None:
        if record.value == b"bad":
            raise ValueError("cannot handle bad")

    profile = queue_profile(
        bs,
        "at_least_once",
        group,
        failure={"attempts": 2, "on_failure": "dlq", "dlq_topic": dlq},
    )
    with QueueConsumer(profile, [topic], telemetry=otel.telemetry) as queue:
        stats = queue.run(handler, max_records=5, idle_timeout_s=30)  # "bad" comes twice
    assert (stats.accepted, stats.rejected, stats.dead_lettered) == (3, 1, 1)

    spans = otel.spans(f"process {topic}")
    by_value = {}
    for span in spans:
        assert span.attributes is not None and span.parent is not None
        assert span.attributes["messaging.consumer.group.name"] == group
        assert span.attributes["messaging.operation.type"] == "process"
        offset = span.attributes["messaging.kafka.offset"]
        by_value.setdefault(values[int(offset)], []).append(span)
    # one span per delivery: the bad record twice (released once, then rejected)
    assert {v: len(s) for v, s in by_value.items()} == {"a": 1, "b": 1, "bad": 2, "c": 1}
    for value, value_spans in by_value.items():
        for span in value_spans:  # each continues the producer's trace under its send span
            assert span.context.trace_id == sent[value].trace_id
            assert span.parent is not None and span.parent.span_id == sent[value].span_id
    failed = [s for s in by_value["bad"] if not s.status.is_ok]
    assert len(failed) == 2  # the handler's exception is on each of its spans

    assert otel.total("kafka_semantics.retries", {"kafka_semantics.retry.operation": "handler"})
    assert otel.total("kafka_semantics.dead_lettered") == 1
    assert [m.value() for m in read_topic(bs, dlq, 1)] == [b"bad"]
