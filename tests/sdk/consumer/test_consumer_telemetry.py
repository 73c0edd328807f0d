"""One trace from the SDK Producer's send span to the SDK Consumer's process span."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from sdk.consumer import Consumer
from sdk.observability._conventions import REBALANCE_KIND
from sdk.producer import Producer
from sdk.profiles import ConsumerProfile, ProducerProfile
from tests.sdk.observability._support import make_otel

pytestmark = pytest.mark.broker


def test_produce_then_consume_is_one_trace(kafka_cluster: Any, make_topic: Any) -> None:
    otel = make_otel()
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(2)
    producer_profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bs)
    with Producer(producer_profile, telemetry=otel.telemetry) as producer:
        for i in range(3):
            producer.send(topic, f"v{i}".encode(), key=f"k{i}".encode())
    group = f"g-{uuid.uuid4().hex[:8]}"
    profile = ConsumerProfile(guarantee="at_least_once", bootstrap_servers=bs, group_id=group)
    seen: list[bytes] = []
    with Consumer(profile, [topic], telemetry=otel.telemetry) as consumer:
        consumer.run(lambda r: seen.append(r.value), max_records=3, idle_timeout_s=30)
    assert sorted(seen) == [b"v0", b"v1", b"v2"]
    sends = {s.context.span_id: s for s in otel.spans(f"send {topic}")}
    processes = otel.spans(f"process {topic}")
    assert len(sends) == 3 and len(processes) == 3
    for span in processes:
        assert span.parent is not None and span.parent.span_id in sends
        parent = sends[span.parent.span_id]
        assert span.context.trace_id == parent.context.trace_id
        assert span.attributes["messaging.consumer.group.name"] == group
    assert otel.total("kafka_semantics.rebalances", {REBALANCE_KIND: "assigned"}) >= 1
