"""Fixtures of the consumer tests."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import pytest

from tests.sdk.consumer._support import seed


class Seeded(NamedTuple):
    bootstrap: str
    topic: str
    group: str


@pytest.fixture
def seeded(kafka_cluster: Any, make_topic: Any, make_group: Any) -> Callable[..., Seeded]:
    """Factory: a new topic holding ``count`` numbered records (or ``values``) and a new group."""

    def factory(count: int, partitions: int = 1, values: list[bytes] | None = None) -> Seeded:
        bs = kafka_cluster.bootstrap_servers
        topic = make_topic(partitions)
        seed(bs, topic, count, values=values)
        return Seeded(bs, topic, make_group())

    return factory
