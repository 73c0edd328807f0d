"""What the session's broker lacks is refused at start, by name; what it has works.

Each test asks the harness which release the session runs (``KSEM_KAFKA_VERSION``, set per
broker by ``./dev.sh compat``) and expects, from the release alone, either a working feature or
a :class:`~sdk.errors.ConfigurationError` naming the feature, the broker found and the broker
needed, within seconds; and the doctor's verdict to match. A broker that has the feature but is
refused, or one that lacks it but is let through (to hang at the first poll), fails the test.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import confluent_kafka
import pytest

from sdk.consumer import Consumer
from sdk.doctor import Report, Status, check
from sdk.errors import ConfigurationError
from sdk.processor import OutputRecord, Processor
from sdk.producer import Producer
from sdk.profiles import ConsumerProfile, ProcessingProfile, ProducerProfile, QueueProfile
from sdk.queue import QueueConsumer
from sdk.testing.admin import create_topic
from sdk.testing.cluster import LocalCluster
from sdk.testing.cluster._config import has_share_groups
from sdk.testing.pytest_plugin import require_local
from tests.sdk.consumer._support import seed

pytestmark = [pytest.mark.broker, pytest.mark.compat]

_REFUSED_WITHIN_S = 15.0
# one init_transactions call (transaction_call_timeout_ms, 10 s), then the doctor's reading;
# before the refusal existed the same start took 5 such calls and ended in a timeout
_TXN_REFUSED_WITHIN_S = 30.0


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


def _processing(bs: str, group: str, guarantee: str = "at_least_once", **consumer: Any) -> Any:
    producer = {"transactional_id_prefix": f"{group}-"} if guarantee == "exactly_once" else {}
    return ProcessingProfile(
        guarantee=guarantee,
        bootstrap_servers=bs,
        consumer={"group_id": group, **consumer},
        producer=producer,
    )


def _run_until(proc: Processor, handler: Any, done: Any, timeout_s: float = 60) -> dict[str, Any]:
    """Run ``proc`` in a thread until ``done()`` (or the timeout), then stop it."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["stats"] = proc.run(handler, handle_sigterm=False)
        except BaseException as exc:  # the test thread asserts on it
            box["error"] = exc

    thread = threading.Thread(target=target)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while thread.is_alive() and not done() and time.monotonic() < deadline:
        time.sleep(0.2)
    proc.stop()
    thread.join(60)
    return box


def test_a_processor_with_the_consumer_group_protocol_runs_from_kafka_4_and_is_refused_before(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    version = require_local(kafka_cluster).kafka_version
    bs = kafka_cluster.bootstrap_servers
    src, dst = make_topic(), make_topic()
    seed(bs, src, 5)
    proc = Processor(_processing(bs, make_group(), group_protocol="consumer"), [src])
    handled: list[Any] = []

    def handler(record: Any) -> list[OutputRecord]:
        handled.append(record)
        return [OutputRecord(topic=dst, key=record.key, value=record.value)]

    started = time.monotonic()
    if _release(version) >= (4, 0):
        box = _run_until(proc, handler, lambda: len(handled) >= 5)
        assert "error" not in box, box
        assert len(handled) == 5
        return
    with pytest.raises(ConfigurationError) as info:
        proc.run(handler, max_duration_s=60, handle_sigterm=False)
    message = str(info.value)
    print(f"Kafka {version}: {message}")
    assert handled == [] and time.monotonic() - started < _REFUSED_WITHIN_S
    assert proc._consumer is None  # refused before any client existed
    assert "KIP-848" in message and _line(version) in message
    assert "Apache Kafka 4.0 or later" in message


def test_transactions_on_a_broker_that_refuses_them_are_refused_by_name(
    kafka_cluster: Any,
) -> None:
    """A transaction log that cannot be created: exactly_once is refused, not retried for ever.

    ``transaction.state.log.replication.factor=3`` on one broker: ``__transaction_state`` is
    never created, the coordinator never answers, and ``init_transactions`` times out on
    every try. The Producer and the Processor must say so, naming the setting, within one
    call timeout and the doctor's reading.
    """
    version = require_local(kafka_cluster).kafka_version  # the session's release, own cluster
    refusals: dict[str, tuple[str, float]] = {}
    with LocalCluster(1, broker_config={"transaction.state.log.replication.factor": 3}) as cluster:
        bs = cluster.bootstrap_servers
        topic = create_topic(bs, "orders", 1)
        profile = ProducerProfile(
            guarantee="exactly_once", bootstrap_servers=bs, transactional_id="refused-0"
        )
        started = time.monotonic()
        with Producer(profile) as producer, pytest.raises(ConfigurationError) as info:
            producer.begin_transaction()
        refusals["Producer"] = (str(info.value), time.monotonic() - started)
        proc = Processor(_processing(bs, "refused", "exactly_once"), [topic], instance_id="p0")
        started = time.monotonic()
        with pytest.raises(ConfigurationError) as info:
            proc.run(lambda record: [], max_duration_s=120, handle_sigterm=False)
        refusals["Processor"] = (str(info.value), time.monotonic() - started)
    for front_end, (message, elapsed) in refusals.items():
        print(f"Kafka {version}, {front_end}, refused in {elapsed:.1f}s: {message}")
        assert elapsed < _TXN_REFUSED_WITHIN_S, (front_end, elapsed)
        assert "transactions (exactly_once) cannot start" in message
        assert "transaction log (__transaction_state)" in message
        assert "replication.factor=3, but the cluster has 1 brokers" in message
        assert "transaction.state.log.replication.factor=1" in message  # the fix
