"""verify_cluster on the queue, as on every front end: a FAIL refuses it before any client."""

from __future__ import annotations

from typing import Any

import pytest

from sdk.errors import DoctorError
from sdk.queue import QueueConsumer
from tests.sdk.queue._support import queue_profile

pytestmark = pytest.mark.broker


def test_verify_cluster_refuses_a_failing_cluster_before_any_client(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    topic = make_topic(1, config={"unclean.leader.election.enable": "true"})
    prof = queue_profile(kafka_cluster.bootstrap_servers, "at_least_once", make_group())
    created: list[dict[str, Any]] = []

    def factory(config: dict[str, Any]) -> Any:
        created.append(config)
        raise AssertionError("no client may be created")

    queue = QueueConsumer(prof, [topic], verify_cluster=True, consumer_factory=factory)
    with pytest.raises(DoctorError) as info:
        queue.run(lambda record: None, idle_timeout_s=5)
    assert f"topic {topic}: unclean leader election" in info.value.checks
    assert created == []
    queue.close()
