"""KIP-848 (group.protocol=consumer) with the server-side assignor rendered by assignor_config."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from sdk.assignors import assignor_config
from sdk.testing.backends import KafkaBackend

pytestmark = pytest.mark.broker


def test_kip848_group_splits_partitions_with_server_side_range(
    kafka_cluster: KafkaBackend, make_topic: Callable[..., str], make_group: Callable[..., str]
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = make_topic(6)
    group = make_group()
    extra = assignor_config("range", "consumer")
    assert "partition.assignment.strategy" not in extra
    consumers = [
        Consumer({"bootstrap.servers": bootstrap, "group.id": group, **extra}) for _ in range(2)
    ]
    try:
        for c in consumers:
            c.subscribe([topic])
        deadline = time.monotonic() + 60
        owned: list[set[int]] = [set(), set()]
        while time.monotonic() < deadline:
            for c in consumers:
                c.poll(0.1)
            owned = [{tp.partition for tp in c.assignment()} for c in consumers]
            if sorted(len(o) for o in owned) == [3, 3] and owned[0] | owned[1] == set(range(6)):
                break
        assert owned[0] | owned[1] == set(range(6)) and not owned[0] & owned[1], owned
        admin = AdminClient({"bootstrap.servers": bootstrap})
        desc = admin.describe_consumer_groups([group])[group].result()
        assert desc.type.name == "CONSUMER"  # a real KIP-848 group, not a classic one
        assert desc.partition_assignor == "range"
        # server-side range: contiguous ranges, 0-2 and 3-5
        assert sorted(sorted(o) for o in owned) == [[0, 1, 2], [3, 4, 5]]
    finally:
        for c in consumers:
            c.close()
