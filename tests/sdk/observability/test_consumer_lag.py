"""Real broker: the lag gauge follows librdkafka's statistics of a consumer mid-partition."""

from __future__ import annotations

import time
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.sdk.observability._support import make_otel

pytestmark = pytest.mark.broker


def test_lag_gauge_reports_records_behind_the_position(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    p = Producer({"bootstrap.servers": bs})
    for i in range(10):
        p.produce(topic, value=str(i))
    assert p.flush(30) == 0
    otel = make_otel()
    tel = otel.telemetry
    c = Consumer(
        {
            "bootstrap.servers": bs,
            "group.id": group,
            "enable.auto.commit": False,
            "statistics.interval.ms": 100,
            "stats_cb": tel.stats_callback(group),
        }
    )
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        got = 0
        deadline = time.monotonic() + 20
        while got < 4 and time.monotonic() < deadline:
            got += len([m for m in c.consume(4 - got, 0.5) if m.error() is None])
        assert got == 4
        lags: list[Any] = []
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # poll() serves stats_cb; fetch nothing more
            c.pause([TopicPartition(topic, 0)])
            c.poll(0.2)
            lags = [x for x in tel.lag() if x.topic == topic]
            if lags and lags[0].lag == 6:
                break
        assert [(x.partition, x.lag, x.group) for x in lags] == [(0, 6, group)]
        # commit 7: the position (4, the next record the application sees) stays the floor
        c.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            c.poll(0.2)
            lags = [x for x in tel.lag() if x.topic == topic]
            if lags and lags[0].lag == 3:
                break
        assert [x.lag for x in lags] == [3]  # max(committed 7, position 4) → 10 - 7
    finally:
        c.close()
    points = otel.points("kafka_semantics.consumer.lag")
    assert [(a["messaging.consumer.group.name"], p.value) for a, p in points] == [(group, 3)]
