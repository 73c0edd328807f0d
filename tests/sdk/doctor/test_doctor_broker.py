"""The doctor on a real 1-node cluster: settings made wrong on purpose, and the clients' opt-in.

A 1-node cluster keeps every topic at replication factor 1, which the doctor must call out for
at_least_once; the other wrong settings are made per topic (unclean election), per profile (a
transaction timeout above the broker's maximum) or on a cluster of their own (share groups
turned off with the feature tool, which would break the session cluster's queues).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from sdk.doctor import Report, Status, check
from sdk.errors import DoctorError
from sdk.processor import Processor
from sdk.profiles import ProcessingProfile, ProducerProfile, QueueProfile
from sdk.testing.admin import create_topic
from sdk.testing.cluster import LocalCluster
from sdk.testing.pytest_plugin import require_local

pytestmark = pytest.mark.broker


def by_name(report: Report) -> dict[str, Any]:
    return {c.name: c for c in report.checks}


def test_replication_one_under_at_least_once_warns_and_names_the_risk(
    kafka_cluster: Any, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(3)
    profile = ProducerProfile(
        guarantee="at_least_once", bootstrap_servers=kafka_cluster.bootstrap_servers
    )
    report = check(profile, [topic])
    print(report)
    checks = by_name(report)
    rf = checks[f"topic {topic}: replication"]
    assert (rf.status, rf.found) == (Status.WARN, "replication factor 1")
    assert "one broker's disk" in rf.why and "add brokers first" in rf.fix
    assert checks["brokers reachable"].status is Status.PASS
    line = ".".join(getattr(kafka_cluster, "kafka_version", "4").split(".")[:2])
    assert checks["cluster version"].found.startswith(f"Kafka {line}")  # the release it runs
    assert checks[f"topic {topic}: exists"].found == "3 partitions (output)"
    assert checks[f"topic {topic}: unclean leader election"].status is Status.PASS
    assert checks[f"topic {topic}: in sync now"].status is Status.PASS
    assert checks[f"topic {topic}: message size"].status is Status.PASS
    assert checks[f"topic {topic}: access"].status is Status.PASS
    assert report.ok  # warnings only
    assert report.duration_s < 5


def test_unclean_election_fails_and_a_missing_topic_fails(
    kafka_cluster: Any, make_topic: Callable[..., str]
) -> None:
    unclean = make_topic(1, config={"unclean.leader.election.enable": "true"})
    missing = f"{unclean}-missing"
    profile = ProducerProfile(
        guarantee="at_least_once", bootstrap_servers=kafka_cluster.bootstrap_servers
    )
    report = check(profile, [unclean, missing])
    checks = by_name(report)
    election = checks[f"topic {unclean}: unclean leader election"]
    assert election.status is Status.FAIL
    assert election.found == "unclean.leader.election.enable=true (set on the topic)"
    assert election.fix.endswith(
        f"--entity-type topics --entity-name {unclean} --alter --add-config "
        "unclean.leader.election.enable=false"
    )
    absent = checks[f"topic {missing}: exists"]
    assert (absent.status, absent.found) == (Status.FAIL, "it does not exist")
    assert f"kafka-topics.sh --bootstrap-server {kafka_cluster.bootstrap_servers}" in absent.fix
    assert not report.ok
    assert {c.name for c in report.failures} == {
        f"topic {unclean}: unclean leader election",
        f"topic {missing}: exists",
    }


def exactly_once(bootstrap: str, **producer: Any) -> ProcessingProfile:
    return ProcessingProfile(
        guarantee="exactly_once",
        bootstrap_servers=bootstrap,
        consumer={"group_id": f"doctor-{time.monotonic_ns()}", "max_poll_interval_ms": 60_000},
        producer={"transactional_id_prefix": "doctor-", **producer},
    )


def test_a_transaction_timeout_above_the_broker_maximum_fails(
    kafka_cluster: Any, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(1)
    profile = exactly_once(kafka_cluster.bootstrap_servers, transaction_timeout_ms=1_000_000)
    report = check(profile, [topic])
    print(report)
    checks = by_name(report)
    timeout = checks["transaction timeout"]
    assert timeout.status is Status.FAIL
    assert timeout.found == (
        "profile transaction_timeout_ms 1000000, broker transaction.max.timeout.ms 900000"
    )
    assert timeout.fix.startswith("transaction_timeout_ms: 900000")
    assert checks["transaction protocol"].status is Status.PASS  # Kafka 4.3: transaction.version 2
    assert checks["transactional id: access"].status is Status.PASS  # no authorizer
    log = checks["transaction log (__transaction_state)"]
    assert log.status is Status.WARN and "replication factor 1" in log.found
    assert checks["poll interval vs transaction timeout"].status is Status.PASS
    assert checks["offsets topic (__consumer_offsets)"].status is Status.WARN
    assert [c.name for c in report.failures] == ["transaction timeout"]


def test_the_processor_refuses_to_start_on_a_failing_cluster(
    kafka_cluster: Any, make_topic: Callable[..., str]
) -> None:
    topic = make_topic(1, config={"unclean.leader.election.enable": "true"})
    profile = exactly_once(kafka_cluster.bootstrap_servers)
    processor = Processor(profile, [topic], instance_id="i0", verify_cluster=True)
    with pytest.raises(DoctorError) as info:
        processor.run(lambda record: [], max_duration_s=5, handle_sigterm=False)
    assert info.value.checks == [f"topic {topic}: unclean leader election"]
    assert "unclean.leader.election.enable=false" in str(info.value)
    assert processor._consumer is None  # refused before any client connected


def test_a_queue_on_a_cluster_with_share_groups_off_fails(kafka_cluster: Any) -> None:
    require_local(kafka_cluster)  # the jars for a cluster of its own
    with LocalCluster(1) as cluster:
        cluster.java_tool(
            "org.apache.kafka.tools.FeatureCommand",
            "--bootstrap-server",
            cluster.bootstrap_servers,
            "downgrade",
            "--feature",
            "share.version=0",
        )
        topic = create_topic(cluster.bootstrap_servers, "jobs", 1)
        profile = QueueProfile(
            guarantee="at_least_once",
            bootstrap_servers=cluster.bootstrap_servers,
            group_id="workers",
        )
        deadline = time.monotonic() + 30
        while True:  # the brokers learn the new level from the metadata log
            report = check(profile, [topic])
            share = by_name(report)["share groups"]
            if share.status is Status.FAIL or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    print(report)
    assert (share.status, share.found) == (Status.FAIL, "share.version 0")
    assert share.fix == (
        f"kafka-features.sh --bootstrap-server {profile.bootstrap_servers} upgrade --feature "
        "share.version=1"
    )
    assert "fails at its first poll" in share.why
    assert by_name(report)["share-group limits"].status is Status.PASS


def test_an_unreachable_cluster_is_one_failing_check() -> None:
    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers="127.0.0.1:1")
    report = check(profile, ["t"], timeout_s=2)
    assert [(c.name, c.status) for c in report.checks] == [("brokers reachable", Status.FAIL)]
    assert "127.0.0.1:1" in report.checks[0].found
    assert "Traceback" not in str(report) and "%3|" not in str(report)
