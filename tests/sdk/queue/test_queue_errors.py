"""Clear errors of the queue consumer that need no broker: no share groups, a bad config."""

from __future__ import annotations

from typing import Any

import confluent_kafka
import pytest
from confluent_kafka import KafkaError, KafkaException, Message

try:  # what ShareConsumer.poll returns from confluent-kafka 2.16 on
    from confluent_kafka import Messages
except ImportError:  # pragma: no cover - older releases return a list
    Messages = None

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
        pytest.raises(KafkaClientError, match=r"share groups need Apache Kafka 4\.2") as info,
    ):
        queue.run(lambda record: None, max_records=1)
    assert info.value.code == KafkaError.UNSUPPORTED_VERSION
    assert "ShareGroupHeartbeat not supported" in str(info.value)


@pytest.mark.skipif(
    not hasattr(confluent_kafka, "ShareConsumer"), reason="no ShareConsumer in this confluent-kafka"
)
def test_a_librdkafka_key_it_does_not_know_is_a_configuration_error() -> None:
    queue = QueueConsumer(_profile(extras={"no.such.property": "1"}), ["t"], telemetry=False)
    with queue, pytest.raises(ConfigurationError, match=r"no\.such\.property"):
        queue.run(lambda record: None, max_records=1)


def test_topics_must_be_a_list_of_names() -> None:
    with pytest.raises(ConfigurationError, match="topics"):
        QueueConsumer(_profile(), "orders", telemetry=False)  # type: ignore[arg-type]


class _Polls:
    """A share consumer's poll() as librdkafka returns it: real messages, some with errors."""

    def __init__(self, messages: list[Any]) -> None:
        self.messages = messages

    def poll(self, timeout: float) -> list[Any]:
        return self.messages


def test_a_poll_without_errors_is_handed_on_whole_and_counted() -> None:
    queue = QueueConsumer(_profile(), ["t"], telemetry=False)
    messages = [Message(topic="t", partition=0, offset=i, value=b"v") for i in range(3)]
    assert queue._source.poll(_Polls(messages), 0, 0.0) == messages
    assert queue.stats.polled == 3 and queue.stats.redelivered == 0  # no count: first delivery
    assert queue.stats.events == []


@pytest.mark.skipif(Messages is None, reason="this confluent-kafka's poll returns a list")
def test_a_messages_poll_is_handed_on_as_a_list_of_its_records() -> None:
    # handle_run indexes a list: a Messages poll is made a list first
    queue = QueueConsumer(_profile(), ["t"], telemetry=False)
    messages = [Message(topic="t", partition=0, offset=i, value=b"v") for i in range(3)]
    polled, copies = Messages(messages), []
    records = polled.records
    polled.records = lambda: copies.append(1) or records()  # its public copy, taken once
    got = queue._source.poll(_Polls(polled), 0, 0.0)
    assert type(got) is list and got == messages and copies == [1]
    bad = Message(topic="t", error=KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION, "moved"))
    assert queue._source.poll(_Polls(Messages([messages[0], bad])), 0, 0.0) == messages[:1]
    assert queue.stats.polled == 4 and len(queue.stats.events) == 1


def test_a_poll_with_errors_hands_on_only_the_records_and_reports_the_errors() -> None:
    queue = QueueConsumer(_profile(), ["t"], telemetry=False)
    ok = [Message(topic="t", partition=0, offset=i, value=b"v") for i in range(2)]
    eof = Message(topic="t", error=KafkaError(KafkaError._PARTITION_EOF))
    bad = Message(topic="t", error=KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION, "moved"))
    assert queue._source.poll(_Polls([ok[0], eof, bad, ok[1]]), 0, 0.0) == ok
    assert queue.stats.polled == 2
    assert len(queue.stats.events) == 1 and "moved" in queue.stats.events[0]  # not the EOF


def test_a_fatal_error_in_a_poll_is_raised() -> None:
    queue = QueueConsumer(_profile(), ["t"], telemetry=False)
    fatal = Message(topic="t", error=KafkaError(KafkaError._FENCED, "fenced", fatal=True))
    with pytest.raises(KafkaClientError, match="fenced"):
        queue._source.poll(_Polls([Message(topic="t", value=b"v"), fatal]), 0, 0.0)
