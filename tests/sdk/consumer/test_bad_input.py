"""Bad input on the broker: unknown topic and unreachable broker give clear SDK errors."""

from __future__ import annotations

import time
from typing import Any

import pytest

from sdk.consumer import Consumer
from sdk.errors import BrokerUnreachableError, UnknownTopicError
from tests.sdk.consumer._support import profile


@pytest.mark.broker
@pytest.mark.parametrize("guarantee", ["at_most_once", "at_least_once"])
def test_unknown_topic_is_a_clear_error(
    guarantee: str, kafka_cluster: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    consumer = Consumer(profile(bs, guarantee, make_group()), ["no-such-topic"])
    with consumer, pytest.raises(UnknownTopicError) as info:
        consumer.run(lambda r: None, idle_timeout_s=30)
    assert "no-such-topic" in str(info.value)
    assert info.value.kafka_error is not None  # the original KafkaError is kept


def test_unreachable_broker_is_a_clear_error() -> None:
    prof = profile("127.0.0.1:1", "at_least_once", "g-unreachable")
    started = time.monotonic()
    with Consumer(prof, ["t"]) as consumer, pytest.raises(BrokerUnreachableError) as info:
        consumer.run(lambda r: None, idle_timeout_s=2)
    assert time.monotonic() - started < 15
    assert "127.0.0.1:1" in str(info.value) or "brokers" in str(info.value).lower()
