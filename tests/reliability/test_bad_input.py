"""Bad input through the public API that no other test covers: invalid topic names, wrong types."""

from __future__ import annotations

from typing import Any

import pytest

from sdk.errors import ConfigurationError, SdkError
from sdk.producer import Producer
from sdk.profiles import ProducerProfile, load_profiles

pytestmark = [pytest.mark.broker]


@pytest.mark.parametrize("topic", ["bad topic", "a/b", "x" * 250, "", "..", "é"])
def test_invalid_topic_name_is_a_clear_error_with_the_record(
    kafka_cluster: Any, topic: str
) -> None:
    profile = ProducerProfile(
        guarantee="at_least_once",
        bootstrap_servers=kafka_cluster.bootstrap_servers,
        delivery_timeout_ms=5000,
    )
    with Producer(profile, metadata_timeout_s=5) as producer, pytest.raises(SdkError) as info:
        producer.send_and_wait(topic, b"v", timeout_s=10)
    print(f"{topic[:20]!r}: {info.value!r}")
    assert "Invalid topic" in str(info.value)  # the broker's verdict, not a timeout
    assert getattr(info.value, "record", None) is not None
    assert info.value.record.topic == topic


@pytest.mark.parametrize(
    ("entry", "field"),
    [
        ({"guarantee": "at_least_once", "retries": "many"}, "retries"),
        ({"guarantee": "at_least_once", "linger_ms": [1]}, "linger_ms"),
        ({"guarantee": "at_least_once", "security": "SASL_SSL"}, "security"),
        ({"guarantee": 3}, "guarantee"),
        ({"guarantee": "exactly-twice"}, "guarantee"),
    ],
)
def test_wrong_types_name_the_field(entry: dict[str, Any], field: str) -> None:
    document = {"defaults": {"bootstrap_servers": "127.0.0.1:9"}, "profiles": {"p": entry}}
    with pytest.raises(ConfigurationError) as info:
        load_profiles(document).producer("p")
    print(repr(info.value))
    assert field in str(info.value)
