"""Clear errors of the queue consumer that need no broker: no share groups, a bad config."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from sdk.errors import ConfigurationError, KafkaClientError
from sdk.profiles import QueueProfile
from sdk.queue import QueueConsumer


def _profile(**kw: Any) -> QueueProfile:
    return QueueProfile(
        guarantee="at_least_once",
        bootstrap_servers="127.0.0.1:1",
        group_id="g",
        apply_group_config=False,
        **kw,
    )


class _NoShareGroups:
    """What a share consumer does against a broker that has no share groups."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.closed = False

    def set_acknowledgement_commit_callback(self, callback: Any) -> None:
        pass

    def subscribe(self, topics: list[str]) -> None:
        pass

    def poll(self, timeout: float) -> list[Any]:
        raise KafkaException(
            KafkaError(KafkaError.UNSUPPORTED_VERSION, "ShareGroupHeartbeat not supported")
        )

    def commit_sync(self, timeout: float) -> dict[Any, Any]:
        return {}

    def close(self) -> None:
        self.closed = True


def test_a_broker_without_share_groups_is_named_as_such() -> None:
    queue = QueueConsumer(_profile(), ["t"], consumer_factory=_NoShareGroups, telemetry=False)
    with (
        queue,
        pytest.raises(KafkaClientError, match=r"share groups need Apache Kafka 4\.1") as info,
    ):
        queue.run(lambda record: None, max_records=1)
    assert info.value.code == KafkaError.UNSUPPORTED_VERSION
    assert "ShareGroupHeartbeat not supported" in str(info.value)


def test_a_librdkafka_key_it_does_not_know_is_a_configuration_error() -> None:
    queue = QueueConsumer(_profile(extras={"no.such.property": "1"}), ["t"], telemetry=False)
    with queue, pytest.raises(ConfigurationError, match=r"no\.such\.property"):
        queue.run(lambda record: None, max_records=1)


def test_topics_must_be_a_list_of_names() -> None:
    with pytest.raises(ConfigurationError, match="topics"):
        QueueConsumer(_profile(), "orders", telemetry=False)  # type: ignore[arg-type]
