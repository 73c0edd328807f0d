"""The doctor on the 3-node cluster: a correct setup passes every check; wrong ones do not.

The session's 3-node cluster has replication factor 3 and min.insync.replicas 2 by default
(the recommended setting), so a topic made with its defaults is the correct setup; the wrong
ones are made per topic. The last test stops a broker to see partitions under-replicated now.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from sdk.doctor import Report, Status, check
from sdk.profiles import ProcessingProfile
from sdk.testing.admin import delete_topic
from sdk.testing.pytest_plugin import require_local
from tests.sdk.processor._support import wait_for

pytestmark = pytest.mark.cluster


def by_name(report: Report) -> dict[str, Any]:
    return {c.name: c for c in report.checks}


def processing(bootstrap: str, guarantee: str, **consumer: Any) -> ProcessingProfile:
    producer = {"transactional_id_prefix": "doctor-"} if guarantee == "exactly_once" else {}
    return ProcessingProfile(
        guarantee=guarantee,
        bootstrap_servers=bootstrap,
        consumer={"group_id": f"doctor-{time.monotonic_ns()}", **consumer},
        producer=producer,
    )


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once"])
def test_a_correct_setup_passes_every_check(
    kafka_cluster3: Any, make_topic: Callable[..., str], guarantee: str
) -> None:
    bs = kafka_cluster3.bootstrap_servers
    inputs = make_topic(3, cluster=kafka_cluster3, replication_factor=3)
    outputs = make_topic(3, cluster=kafka_cluster3, replication_factor=3)
    # a poll interval within the transaction timeout (the SDK's defaults are 300 s and 60 s)
    profile = processing(bs, guarantee, max_poll_interval_ms=60_000)
    report = check(profile, [inputs], output_topics=[outputs])
    print(report)
    assert [c for c in report.checks if c.status is not Status.PASS] == []
    names = set(by_name(report))
    assert {
        "brokers reachable",
        "cluster version",
        "offsets topic (__consumer_offsets)",
        f"group {profile.consumer.group_id}",
        f"topic {inputs}: replication",
        f"topic {inputs}: min.insync.replicas",
        f"topic {outputs}: unclean leader election",
        f"topic {outputs}: in sync now",
        f"topic {outputs}: message size",
        f"topic {outputs}: access",
    } <= names
    if guarantee == "exactly_once":
        assert {
            "transaction protocol",
            "transaction log (__transaction_state)",
            "transaction timeout",
            "poll interval vs transaction timeout",
            "transactional id: access",
        } <= names
    assert by_name(report)["brokers reachable"].found.startswith("3 brokers answered")
    assert by_name(report)[f"topic {inputs}: min.insync.replicas"].found == (
        "min.insync.replicas 2 with replication factor 3"
    )
    assert report.ok and report.duration_s < 5


def test_wrong_topic_settings_on_three_nodes(
    kafka_cluster3: Any, make_topic: Callable[..., str]
) -> None:
    bs = kafka_cluster3.bootstrap_servers
    weak = make_topic(1, cluster=kafka_cluster3, replication_factor=3,
                      config={"min.insync.replicas": "1"})  # fmt: skip
    unclean = make_topic(1, cluster=kafka_cluster3, replication_factor=3,
                         config={"unclean.leader.election.enable": "true"})  # fmt: skip
    impossible = make_topic(1, cluster=kafka_cluster3, replication_factor=2,
                            config={"min.insync.replicas": "3"})  # fmt: skip
    try:
        profile = processing(bs, "at_least_once")
        report = check(profile, [weak], output_topics=[weak, unclean, impossible])
        print(report)
        checks = by_name(report)
        min_isr = checks[f"topic {weak}: min.insync.replicas"]
        assert min_isr.status is Status.WARN
        assert min_isr.found == "min.insync.replicas 1 with replication factor 3"
        assert "leader alone" in min_isr.why
        assert min_isr.fix.endswith(
            f"--entity-type topics --entity-name {weak} --alter --add-config min.insync.replicas=2"
        )
        assert checks[f"topic {unclean}: unclean leader election"].status is Status.FAIL
        never = checks[f"topic {impossible}: min.insync.replicas"]
        assert never.status is Status.FAIL and "NOT_ENOUGH_REPLICAS" in never.why
        assert checks[f"topic {impossible}: replication"].status is Status.WARN  # RF 2
        # ISR (2) below min ISR (3) now: acks=all writes fail at this moment too
        assert checks[f"topic {impossible}: in sync now"].status is Status.FAIL
        assert {c.name for c in report.failures} == {
            f"topic {unclean}: unclean leader election",
            f"topic {impossible}: min.insync.replicas",
            f"topic {impossible}: in sync now",
        }
    finally:  # min ISR above RF on the shared cluster would make every broker unsafe to stop
        delete_topic(bs, impossible)


def test_a_stopped_broker_shows_under_replicated_partitions_now(
    kafka_cluster3: Any, make_topic: Callable[..., str]
) -> None:
    cluster = require_local(kafka_cluster3)
    topic = make_topic(3, cluster=kafka_cluster3, replication_factor=3)
    profile = processing(cluster.bootstrap_servers, "at_least_once")
    victim = cluster.leader_of(topic, 0)
    cluster.stop(victim)  # a clean shutdown leaves the ISR at once
    try:

        def under() -> Any:
            found = by_name(check(profile, output_topics=[topic]))[f"topic {topic}: in sync now"]
            return found if found.status is Status.WARN else None

        found = wait_for(under, 30, "the ISR to shrink")
        assert "0, 1, 2 are under-replicated" in found.found
        assert "do not restart another broker" in found.why
    finally:
        cluster.restart(victim)

    def in_sync() -> bool:
        found = by_name(check(profile, output_topics=[topic]))[f"topic {topic}: in sync now"]
        return found.status is Status.PASS

    wait_for(in_sync, 60, "the restarted broker to catch up")
