"""What the session's broker lacks is refused at start, by name; what it has works.

Each test asks the harness which release the session runs (``KSEM_KAFKA_VERSION``, set per
broker by ``./dev.sh compat``) and expects, from the release alone, either a working feature or
a :class:`~sdk.errors.ConfigurationError` naming the feature, the broker found and the broker
needed, within seconds; and the doctor's verdict to match. A broker that has the feature but is
refused, or one that lacks it but is let through (to hang at the first poll), fails the test.
"""

from __future__ import annotations

import time
from typing import Any

import confluent_kafka
import pytest

from sdk.consumer import Consumer
from sdk.doctor import Report, Status, check
from sdk.errors import ConfigurationError
from sdk.profiles import ConsumerProfile, QueueProfile
from sdk.queue import QueueConsumer
from sdk.testing.cluster._config import has_share_groups
from sdk.testing.pytest_plugin import require_local
from tests.sdk.consumer._support import seed

pytestmark = [pytest.mark.broker, pytest.mark.compat]

_REFUSED_WITHIN_S = 15.0


def _release(version: str) -> tuple[int, int]:
    major, minor, *_ = (int(p) for p in version.split("."))
    return major, minor


def _line(version: str) -> str:
    return "Kafka {}.{}".format(*_release(version))


def _checks(report: Report) -> dict[str, Any]:
    return {c.name: c for c in report.checks}


def test_a_queue_runs_where_the_broker_has_share_groups_and_is_refused_where_not(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    version = require_local(kafka_cluster).kafka_version
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic()
    seed(bs, topic, 5)
    profile = QueueProfile(
        guarantee="at_least_once",
        bootstrap_servers=bs,
        group_id=make_group(),
        record_lock_duration_ms=5_000,
    )
    got: list[Any] = []
    started = time.monotonic()
    with QueueConsumer(profile, [topic]) as queue:
        if has_share_groups(version) and hasattr(confluent_kafka, "ShareConsumer"):
            queue.run(got.append, max_records=5, idle_timeout_s=60, handle_sigterm=False)
            assert len(got) == 5
            return
        with pytest.raises(ConfigurationError) as info:
            queue.run(got.append, max_records=5, idle_timeout_s=60, handle_sigterm=False)
    elapsed = time.monotonic() - started
    message = str(info.value)
    print(f"Kafka {version}, confluent-kafka {confluent_kafka.__version__}: {message}")
    assert got == [] and elapsed < _REFUSED_WITHIN_S, elapsed
    assert "share groups" in message
    if not has_share_groups(version):  # the broker is checked first
        assert _line(version) in message and "Kafka 4.2 or later" in message
    else:
        assert f"confluent-kafka is {confluent_kafka.__version__}" in message
        assert "confluent-kafka 2.15.0 or later" in message


def test_the_consumer_group_protocol_runs_from_kafka_4_and_is_refused_before(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    version = require_local(kafka_cluster).kafka_version
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic()
    seed(bs, topic, 5)
    profile = ConsumerProfile(
        guarantee="at_least_once",
        bootstrap_servers=bs,
        group_id=make_group(),
        group_protocol="consumer",
    )
    got: list[Any] = []
    started = time.monotonic()
    with Consumer(profile, [topic]) as consumer:
        if _release(version) >= (4, 0):
            consumer.run(got.append, max_records=5, idle_timeout_s=60, handle_sigterm=False)
            assert len(got) == 5
            return
        with pytest.raises(ConfigurationError) as info:
            consumer.run(got.append, max_records=5, idle_timeout_s=60, handle_sigterm=False)
    message = str(info.value)
    print(f"Kafka {version}: {message}")
    assert got == [] and time.monotonic() - started < _REFUSED_WITHIN_S
    assert "KIP-848" in message and _line(version) in message
    assert "Apache Kafka 4.0 or later" in message


def test_the_doctor_fails_what_the_broker_lacks_and_passes_what_it_has(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    version = require_local(kafka_cluster).kafka_version
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic()
    queue = _checks(
        check(QueueProfile(guarantee="at_least_once", bootstrap_servers=bs, group_id="q"), [topic])
    )["share groups"]
    group = _checks(
        check(
            ConsumerProfile(
                guarantee="at_least_once",
                bootstrap_servers=bs,
                group_id=make_group(),
                group_protocol="consumer",
            ),
            [topic],
        )
    )["consumer group protocol"]
    print(f"Kafka {version}: share groups {queue.status.name} ({queue.found}); fix: {queue.fix}")
    print(f"Kafka {version}: consumer group protocol {group.status.name} ({group.found})")
    assert queue.status is (Status.PASS if has_share_groups(version) else Status.FAIL)
    assert group.status is (Status.PASS if _release(version) >= (4, 0) else Status.FAIL)
