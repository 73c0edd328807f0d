"""The doctor as a SASL_SSL principal with ACLs: what it may do, as the broker says.

A 1-node cluster of this module's own (about 3 s to start) gets a SASL_SSL listener with the
StandardAuthorizer (sdk.testing.security). ``app`` may describe, read and write the topic but
has no ACL on its group; the doctor must say so (FAIL with the kafka-acls.sh command), say what
it could not read because ``app`` may not describe broker configs, and the Consumer's
``verify_cluster`` must refuse to start.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from sdk.consumer import Consumer
from sdk.doctor import Report, Status, check
from sdk.errors import DoctorError
from sdk.profiles import ConsumerProfile, ProducerProfile, SecurityProfile
from sdk.testing.admin import create_topic
from sdk.testing.cluster import LocalCluster
from sdk.testing.security import create_scram_user, grant, make_tls, sasl_ssl_config

pytestmark = pytest.mark.broker

PASSWORD = f"app-{uuid.uuid4().hex}"


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tls = make_tls(tmp_path_factory.mktemp("tls"))
    cluster = LocalCluster(
        1, extra_listeners={"SASL_SSL": "SASL_SSL"}, broker_config=sasl_ssl_config(tls)
    )
    cluster.start()
    try:
        bs = cluster.bootstrap_servers  # PLAINTEXT: the admin (a super user)
        topic = create_topic(bs, f"secure-{uuid.uuid4().hex[:8]}", 2)
        create_scram_user(bs, "app", PASSWORD)
        grant(bs, "app", topic, ["DESCRIBE", "READ", "WRITE"])  # nothing on any group
        yield {
            "topic": topic,
            "bootstrap": cluster.listener_bootstrap("SASL_SSL"),
            "security": SecurityProfile(
                protocol="SASL_SSL",
                sasl_mechanism="SCRAM-SHA-512",
                sasl_username="app",
                sasl_password=PASSWORD,
                ssl_ca_location=str(tls.ca),
            ),
        }
    finally:
        cluster.close()


def by_name(report: Report) -> dict[str, Any]:
    return {c.name: c for c in report.checks}


def test_a_group_without_an_acl_fails_with_the_acl_command(secure: dict[str, Any]) -> None:
    profile = ConsumerProfile(
        guarantee="at_least_once",
        bootstrap_servers=secure["bootstrap"],
        group_id="app-group",
        security=secure["security"],
    )
    report = check(profile, [secure["topic"]])
    print(report)
    checks = by_name(report)
    assert checks["brokers reachable"].status is Status.PASS  # ApiVersions over TLS too
    assert checks["cluster version"].status is Status.PASS
    group = checks["group app-group"]
    assert group.status is Status.FAIL
    assert group.found.startswith("could not describe it: not authorized")
    assert group.fix.endswith(
        "--command-config admin.properties --add --allow-principal User:app --operation Read "
        "--group app-group"
    )
    assert checks[f"topic {secure['topic']}: access"].found == "User:app may DESCRIBE, READ"
    assert checks[f"topic {secure['topic']}: access"].status is Status.PASS
    # app may not describe the topic's or the broker's configs: said, never passed
    unread = checks[f"topic {secure['topic']}: min.insync.replicas"]
    assert unread.status is Status.WARN
    assert unread.found == (
        "could not read min.insync.replicas: not authorized: needs DESCRIBE_CONFIGS on topic "
        f"{secure['topic']}"
    )
    offsets = checks["offsets topic (__consumer_offsets)"]
    assert offsets.status is Status.WARN and offsets.found.startswith("could not read it")
    assert [c.name for c in report.failures] == ["group app-group"]


def test_the_consumer_refuses_to_start_without_its_group_acl(secure: dict[str, Any]) -> None:
    profile = ConsumerProfile(
        guarantee="at_least_once",
        bootstrap_servers=secure["bootstrap"],
        group_id="app-group",
        security=secure["security"],
    )
    consumer = Consumer(profile, [secure["topic"]], verify_cluster=True)
    with consumer, pytest.raises(DoctorError) as info:
        consumer.run(lambda record: None, idle_timeout_s=5, handle_sigterm=False)
    assert info.value.checks == ["group app-group"]
    assert "--operation Read --group app-group" in str(info.value)
    assert PASSWORD not in str(info.value) and PASSWORD not in str(info.value.report)


def test_a_transactional_id_whose_acls_cannot_be_read_is_a_warning(
    secure: dict[str, Any],
) -> None:
    profile = ProducerProfile(
        guarantee="exactly_once",
        bootstrap_servers=secure["bootstrap"],
        transactional_id_prefix="app-",
        security=secure["security"],
    )
    report = check(profile, [secure["topic"]])
    checks = by_name(report)
    tid = checks["transactional id: access"]
    assert tid.status is Status.WARN
    assert tid.found.startswith("could not read the ACLs of transactional id prefix 'app-'")
    assert "kafka-acls.sh" in tid.fix and "--list --transactional-id app-" in tid.fix
    assert checks[f"topic {secure['topic']}: access"].found == "User:app may DESCRIBE, WRITE"
    limit = checks["transaction timeout"]
    assert limit.status is Status.WARN and "DESCRIBE_CONFIGS on the cluster" in limit.found


def test_wrong_credentials_fail_reachability(secure: dict[str, Any]) -> None:
    wrong = SecurityProfile(
        **{**secure["security"].model_dump(), "sasl_password": "not-the-password"}
    )
    profile = ProducerProfile(
        guarantee="at_least_once", bootstrap_servers=secure["bootstrap"], security=wrong
    )
    report = check(profile, [secure["topic"]], timeout_s=5)
    print(report)
    reachable = report.checks[0]
    assert [c.status for c in report.checks] == [Status.FAIL]
    assert "(_AUTHENTICATION)" in reachable.found  # librdkafka's own report of the refusal
    assert reachable.fix.startswith("check security.sasl_username / sasl_password")
    assert "not-the-password" not in str(report)
