"""``sdk.doctor.create_topics`` on a real broker: creates what is missing, leaves the rest."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient

from sdk.doctor import create_topics
from sdk.errors import ConfigurationError, KafkaClientError
from sdk.profiles import ConsumerProfile

pytestmark = pytest.mark.broker


def test_creates_the_missing_topics_once_with_their_partitions(kafka_cluster: Any) -> None:
    servers = kafka_cluster.bootstrap_servers
    a, b = (f"create-{uuid.uuid4().hex[:8]}" for _ in range(2))
    profile = ConsumerProfile(guarantee="at_least_once", bootstrap_servers=servers, group_id="g")
    assert create_topics(profile, [a], partitions=3) == [a]
    assert create_topics(servers, [a, b, a]) == [b]  # a exists: left alone; b once
    topics = AdminClient({"bootstrap.servers": servers}).list_topics(timeout=10).topics
    assert len(topics[a].partitions) == 3
    assert len(topics[b].partitions) == 1


def test_a_refused_topic_raises_naming_it(kafka_cluster: Any) -> None:
    name = f"bad-{uuid.uuid4().hex[:8]}"
    with pytest.raises(KafkaClientError, match=name):
        create_topics(kafka_cluster.bootstrap_servers, [name], replication_factor=5)


def test_an_empty_name_is_refused_before_any_connection() -> None:
    with pytest.raises(ConfigurationError, match="topics"):
        create_topics("127.0.0.1:1", [""])
