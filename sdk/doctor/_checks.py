"""``check(profile, topics)``: every check of a profile against its cluster, and ``verify``."""

from __future__ import annotations

import time
from collections.abc import Sequence

from sdk._client import admin_config
from sdk.doctor._access import (
    judge_group_access,
    judge_topic_access,
    judge_transactional_id_access,
)
from sdk.doctor._admin import ClusterReader
from sdk.doctor._cluster import cluster_checks
from sdk.doctor._facts import GroupFacts, TopicFacts, Unreadable
from sdk.doctor._groups import judge_group, judge_share_configs, judge_share_limits
from sdk.doctor._registry import registry_checks
from sdk.doctor._report import Check, Report, Status
from sdk.doctor._subject import AnyProfile, Subject, subject_of
from sdk.doctor._topics import topic_checks
from sdk.doctor._transactions import judge_poll_interval, judge_transaction_timeout
from sdk.errors import DoctorError
from sdk.profiles import Guarantee
from sdk.schemas import SchemaRegistryConfig

__all__ = ["check", "verify"]


def check(
    profile: AnyProfile,
    topics: Sequence[str] = (),
    *,
    output_topics: Sequence[str] = (),
    timeout_s: float = 10.0,
    label: str | None = None,
    schema_registry: SchemaRegistryConfig | None = None,
) -> Report:
    """Check the cluster of ``profile`` against what its guarantee needs.

    Connects with the profile's own bootstrap servers and security settings (so access is
    judged for the profile's principal), reads the cluster with the admin API and one
    ApiVersions request per broker, and writes nothing. With ``schema_registry`` it also reads
    the registry: whether it answers, and each topic's subject (docs/doctor.md).

    Example::

        report = check(profiles.processing("orders"), ["orders"], output_topics=["totals"])
        if not report.ok:
            print(report)

    Args:
        profile: A producer, consumer, processing or queue profile.
        topics: The topics a producer profile writes, or the others read.
        output_topics: The topics a processing profile writes.
        timeout_s: Seconds each request may take.
        label: How the report names the profile (default: its kind and guarantee).
        schema_registry: The registry the profile's (de)serializers use (the command line
            passes the profile's ``schema_registry`` section); None checks no registry.

    Returns:
        The report: one :class:`Check` per finding; ``report.ok`` is False on any FAIL.

    Raises:
        ConfigurationError: ``profile`` is not a profile, a topic name is empty, or librdkafka
            refused the profile's connection settings. Everything the cluster answers (or does
            not) is a check, never an exception.
    """
    started = time.monotonic()
    s = subject_of(profile, topics, output_topics)
    reader = ClusterReader(
        admin_config(s.bootstrap_servers, s.security.render(), s.extras),
        s.security,
        s.extras,
        timeout_s=timeout_s,
    )
    subject = label or "profile"
    report = Report(f"{subject} ({s.kind}, {s.guarantee.value})", s.guarantee.value)
    report.checks = _run(s, reader)
    if schema_registry is not None:
        # a service of its own: judged whatever the brokers answered
        report.checks += registry_checks(s, schema_registry, timeout_s=timeout_s)
    cluster = reader.cluster()
    report.cluster_id = "" if isinstance(cluster, Unreadable) else cluster.cluster_id
    report.duration_s = time.monotonic() - started
    return report


def _run(s: Subject, reader: ClusterReader) -> list[Check]:
    checks = cluster_checks(s, reader)
    cluster = reader.cluster()
    if isinstance(cluster, Unreadable):
        return checks
    broker = reader.broker_configs()
    producer, consumer, queue = s.producer, s.consumer, s.queue
    eos = s.guarantee is Guarantee.EXACTLY_ONCE
    if producer is not None and eos:
        limit = (
            broker
            if isinstance(broker, Unreadable)
            else broker.get("transaction.max.timeout.ms", Unreadable("not listed"))
        )
        checks.append(judge_transaction_timeout(producer.transaction_timeout_ms, limit))
        if consumer is not None:
            checks.append(
                judge_poll_interval(consumer.max_poll_interval_ms, producer.transaction_timeout_ms)
            )
    group: GroupFacts | Unreadable | None = None
    if s.group_id is not None:
        group = reader.group(s.group_id)
        checks.append(judge_group(s, group))
    if queue is not None:
        checks.append(judge_share_limits(queue, broker))
        if not queue.apply_group_config:
            checks.append(judge_share_configs(s, queue, reader.group_configs(queue.group_id)))
    roles: dict[str, list[str]] = {t: ["input"] for t in s.inputs}
    for t in s.outputs:
        roles.setdefault(t, []).append("dead-letter" if t == s.dead_letter else "output")
    described = reader.topics(list(roles))
    for pattern in s.patterns:
        checks.append(
            Check(
                f"topics {pattern}",
                Status.WARN,
                "a subscription by pattern: the doctor checks topics by name",
                "",
                "name the topics it matches with --topic",
            )
        )
    for topic, role in roles.items():
        checks += topic_checks(s, reader, topic, described[topic], role)
    # security last: what the principal may do, once the resources are known to exist
    for topic, role in roles.items():
        facts = described[topic]
        if isinstance(facts, TopicFacts):
            checks.append(judge_topic_access(s, facts, role))
    if isinstance(group, GroupFacts):
        checks.append(judge_group_access(s, group))
    if producer is not None and eos:
        ops = cluster.operations or frozenset()
        acls = (
            reader.transactional_id_acls()
            if "DESCRIBE" in ops
            else Unreadable("not authorized: describing ACLs needs DESCRIBE on the cluster")
        )
        checks.append(judge_transactional_id_access(s, cluster, acls))
    return checks


def verify(
    profile: AnyProfile,
    topics: Sequence[str] = (),
    *,
    output_topics: Sequence[str] = (),
    timeout_s: float = 10.0,
    schema_registry: SchemaRegistryConfig | None = None,
) -> Report:
    """Run :func:`check` and refuse a cluster with a FAIL (the clients' ``verify_cluster``).

    Args:
        profile: See :func:`check`.
        topics: See :func:`check`.
        output_topics: See :func:`check`.
        timeout_s: See :func:`check`.
        schema_registry: See :func:`check`.

    Returns:
        The report (warnings allowed).

    Raises:
        DoctorError: A check failed; the message names each failing check, what it found
            and the fix, and ``.report`` holds the whole report.
        ConfigurationError: See :func:`check`.
    """
    report = check(
        profile,
        topics,
        output_topics=output_topics,
        timeout_s=timeout_s,
        schema_registry=schema_registry,
    )
    if report.ok:
        return report
    details = "; ".join(f"{c.name}: {c.found} (fix: {c.fix or c.why})" for c in report.failures)
    raise DoctorError(
        f"the cluster cannot keep this {report.guarantee} profile's guarantee: "
        f"{len(report.failures)} check(s) failed: {details}",
        report=report,
        checks=[c.name for c in report.failures],
    )
