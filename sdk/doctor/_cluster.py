"""Cluster-wide checks: brokers, version, the features a profile relies on, internal topics."""

from __future__ import annotations

from collections.abc import Mapping

from sdk.doctor._admin import ClusterReader
from sdk.doctor._facts import ClusterFacts, ConfigValue, TopicFacts, Unreadable
from sdk.doctor._replication import judge_min_isr, judge_replication
from sdk.doctor._report import Check, Status, worst
from sdk.doctor._subject import Subject
from sdk.doctor._topics import judge_in_sync
from sdk.doctor._wire import CONSUMER_GROUP_HEARTBEAT, SHARE_GROUP_HEARTBEAT, BrokerVersions
from sdk.errors import AuthenticationError, BrokerUnreachableError

__all__ = [
    "METADATA_VERSIONS",
    "cluster_checks",
    "feature_levels",
    "judge_group_protocol",
    "judge_internal_topic",
    "judge_reachable",
    "judge_share_groups",
    "judge_transaction_protocol",
    "judge_version",
]

METADATA_VERSIONS: dict[int, str] = {
    7: "3.3-IV3", 8: "3.4-IV0", 9: "3.5-IV0", 10: "3.5-IV1", 11: "3.5-IV2", 12: "3.6-IV0",
    13: "3.6-IV1", 14: "3.6-IV2", 15: "3.7-IV0", 16: "3.7-IV1", 17: "3.7-IV2", 18: "3.7-IV3",
    19: "3.7-IV4", 20: "3.8-IV0", 21: "3.9-IV0", 22: "4.0-IV0", 23: "4.0-IV1", 24: "4.0-IV2",
    25: "4.0-IV3", 26: "4.1-IV0", 27: "4.1-IV1", 28: "4.2-IV0", 29: "4.2-IV1", 30: "4.3-IV0",
    31: "4.4-IV0", 32: "4.4-IV1", 33: "4.4-IV2",
}  # fmt: skip
"""``metadata.version`` feature levels and their names (Kafka's ``MetadataVersion``; 32 and 33
from the 4.4.0 jar, whose new clusters finalize 33: measured, docs/compatibility.md)."""

_SHARE_GROUPS_SINCE = 26  # 4.1-IV0: share.version became a feature a cluster can finalize
SHARE_GROUPS_USABLE_SINCE = 28
"""4.2-IV0: on Kafka 4.1 (preview) with share.version 1 the share consumer joins and gets no
records (measured with confluent-kafka 2.16.1: docs/compatibility.md)."""


def feature_levels(
    versions: Mapping[int, BrokerVersions | Unreadable],
) -> tuple[dict[str, int], BrokerVersions] | Unreadable:
    """The finalized feature levels (cluster-wide) and the first broker's answer that had them."""
    reasons = []
    for answer in versions.values():
        if isinstance(answer, BrokerVersions):
            return dict(answer.finalized), answer
        reasons.append(answer.reason)
    return Unreadable("; ".join(reasons) or "no broker listed")


def judge_reachable(
    s: Subject,
    cluster: ClusterFacts | Unreadable,
    versions: Mapping[int, BrokerVersions | Unreadable],
) -> Check:
    """Did the bootstrap servers answer, and does every advertised broker answer this client."""
    name = "brokers reachable"
    if isinstance(cluster, Unreadable):
        if isinstance(cluster.error, AuthenticationError):
            fix = "check security.sasl_username / sasl_password (or the client certificate)"
        elif isinstance(cluster.error, BrokerUnreachableError) or cluster.error is None:
            fix = "check bootstrap_servers, the network path and the listener's security protocol"
        else:
            fix = "check bootstrap_servers and security against the broker's listeners"
        return Check(
            name,
            Status.FAIL,
            f"no answer from {s.bootstrap_servers}: {cluster.reason}",
            "a client with this profile cannot reach the cluster at all",
            fix,
        )
    silent = {n: a for n, a in versions.items() if isinstance(a, Unreadable)}
    listed = ", ".join(f"{n.node_id} {n.host}:{n.port}" for n in cluster.nodes)
    if silent:
        return Check(
            name,
            Status.WARN,
            f"{len(cluster.nodes) - len(silent)} of {len(cluster.nodes)} brokers answered; "
            + "; ".join(f"broker {n}: {a.reason}" for n, a in silent.items()),
            "clients connect to every broker at the address it advertises; the partitions a "
            "silent broker leads cannot be written or read by this client",
            "check advertised.listeners of the silent brokers and the network path to them",
        )
    return Check(
        name,
        Status.PASS,
        f"{len(cluster.nodes)} broker{'' if len(cluster.nodes) == 1 else 's'} answered "
        f"({listed}); controller {cluster.controller}",
    )


def judge_version(versions: Mapping[int, BrokerVersions | Unreadable]) -> Check:
    """The cluster's ``metadata.version``: the Kafka release its brokers run at."""
    name = "cluster version"
    levels = feature_levels(versions)
    if isinstance(levels, Unreadable):
        return Check(name, Status.WARN, f"could not read the feature levels: {levels.reason}")
    finalized, answer = levels
    if answer.legacy:
        return Check(
            name,
            Status.WARN,
            "the brokers refused ApiVersions v3: Kafka older than 2.4",
            "no feature levels: transactions, group protocols and share groups cannot be "
            "checked, and the SDK is tested against Kafka 4",
            "upgrade the brokers",
        )
    level = finalized.get("metadata.version")
    if level is None:
        return Check(
            name,
            Status.WARN,
            "no metadata.version finalized: a ZooKeeper-mode cluster (Kafka 3.x or older)",
            "the feature levels the SDK relies on (transaction.version, group.version, "
            "share.version) exist only in KRaft mode",
            "migrate the cluster to KRaft (Kafka 4 has no ZooKeeper mode)",
        )
    release = METADATA_VERSIONS.get(
        level, f"newer than {METADATA_VERSIONS[max(METADATA_VERSIONS)]}"
    )
    if level < min(METADATA_VERSIONS):
        release = "older than 3.3"
    features = ", ".join(
        f"{k}={v}" for k, v in sorted(finalized.items()) if k != "metadata.version"
    )
    return Check(
        name,
        Status.PASS,
        f"Kafka {release.split('-')[0]} (metadata.version {release}, level {level}); "
        f"features: {features or 'none finalized'}",
    )


def judge_transaction_protocol(
    s: Subject, finalized: Mapping[str, int] | Unreadable, verification: ConfigValue | Unreadable
) -> Check:
    """exactly_once: KIP-890 (transaction.version 2, or partition verification on the broker)."""
    name = "transaction protocol"
    fix = s.tool("kafka-features.sh", "upgrade --feature transaction.version=2")
    verifies = (
        None if isinstance(verification, Unreadable) else str(verification.value).lower() == "true"
    )
    if isinstance(finalized, Unreadable):
        if verifies:
            return Check(
                name,
                Status.PASS,
                "transaction.partition.verification.enable=true (transaction.version unread: "
                f"{finalized.reason})",
            )
        return Check(name, Status.WARN, f"could not read transaction.version: {finalized.reason}")
    tv = finalized.get("transaction.version", 0)
    if tv >= 2:
        return Check(
            name,
            Status.PASS,
            f"transaction.version {tv} (KIP-890: the epoch is bumped at every transaction end, "
            "late writes of an ended transaction are refused)",
        )
    if verifies:
        return Check(
            name,
            Status.PASS,
            f"transaction.version {tv}, transaction.partition.verification.enable=true "
            "(KIP-890 part 1: writes to a partition outside the open transaction are refused)",
        )
    state = verification.reason if isinstance(verification, Unreadable) else "false"
    found = f"transaction.version {tv}, transaction.partition.verification.enable={state}"
    return Check(
        name,
        Status.WARN,
        found,
        "without KIP-890 a write delayed past its transaction's end can land in no "
        "transaction and stay open (a hanging transaction), blocking read_committed readers "
        "until an operator aborts it",
        fix
        + "\nor "
        + s.tool(
            "kafka-configs.sh",
            "--entity-type brokers --entity-default --alter --add-config "
            "transaction.partition.verification.enable=true",
        ),
    )


def judge_group_protocol(
    s: Subject,
    finalized: Mapping[str, int] | Unreadable,
    apis: Mapping[int, tuple[int, int]] | None,
    protocols: ConfigValue | Unreadable,
) -> Check:
    """``group.protocol=consumer`` (KIP-848) needs group.version 1 and the consumer protocol on."""
    name = "consumer group protocol"
    problems: list[str] = []
    unread: list[str] = []
    found: list[str] = []
    if isinstance(finalized, Unreadable):
        unread.append(f"group.version ({finalized.reason})")
    else:
        level = finalized.get("group.version", 0)
        found.append(f"group.version {level}")
        if level < 1:
            problems.append("group.version is 0")
    if apis is not None:
        has = CONSUMER_GROUP_HEARTBEAT in apis
        found.append("ConsumerGroupHeartbeat " + ("served" if has else "not served"))
        if not has:
            problems.append("the broker does not serve ConsumerGroupHeartbeat")
    if isinstance(protocols, Unreadable):
        unread.append(f"group.coordinator.rebalance.protocols ({protocols.reason})")
    else:
        found.append(f"group.coordinator.rebalance.protocols={protocols.value}")
        if "consumer" not in str(protocols.value or "").split(","):
            problems.append("the consumer protocol is not enabled")
    text = ", ".join(found) + ("; could not read " + ", ".join(unread) if unread else "")
    if problems:
        return Check(
            name,
            Status.FAIL,
            text,
            "the profile sets group_protocol: consumer; the broker refuses the consumer's "
            "heartbeats, so it never joins the group",
            s.tool("kafka-features.sh", "upgrade --feature group.version=1")
            + "\nand group.coordinator.rebalance.protocols=classic,consumer in server.properties "
            "(or group_protocol: classic in the profile)",
        )
    if unread:
        return Check(name, Status.WARN, text)
    return Check(name, Status.PASS, text)


def judge_share_groups(
    s: Subject,
    finalized: Mapping[str, int] | Unreadable,
    apis: Mapping[int, tuple[int, int]] | None,
) -> Check:
    """A queue profile needs share groups: ``share.version`` 1 finalized (KIP-932)."""
    name = "share groups"
    if isinstance(finalized, Unreadable):
        return Check(name, Status.WARN, f"could not read share.version: {finalized.reason}")
    level = finalized.get("share.version", 0)
    metadata = finalized.get("metadata.version", 0)
    served = apis is None or SHARE_GROUP_HEARTBEAT in apis
    found = f"share.version {level}" + ("" if served else ", ShareGroupHeartbeat not served")
    if level >= 1 and served and metadata and metadata < SHARE_GROUPS_USABLE_SINCE:
        return Check(
            name,
            Status.FAIL,
            f"{found} on metadata.version {metadata} (Kafka 4.1: share groups in preview)",
            "the share consumer joins a Kafka 4.1 share group and is handed no records: the "
            "queue waits for ever",
            "upgrade the cluster to Kafka 4.2 or later",
        )
    if level >= 1 and served:
        return Check(name, Status.PASS, found)
    if metadata and metadata < _SHARE_GROUPS_SINCE:
        fix = "upgrade the cluster to Kafka 4.2 or later"
    else:
        fix = s.tool("kafka-features.sh", "upgrade --feature share.version=1")
    return Check(
        name,
        Status.FAIL,
        found,
        "a queue is a share group; with share groups off the broker refuses the share "
        "consumer's heartbeats and the queue fails at its first poll",
        fix,
    )


def judge_internal_topic(
    s: Subject,
    label: str,
    facts: TopicFacts | Unreadable,
    topic_min_isr: ConfigValue | Unreadable | None,
    broker: Mapping[str, ConfigValue] | Unreadable,
    keys: tuple[str, str],
    brokers: int | None,
    what: str,
) -> Check:
    """An internal topic (offsets, transactions, share state): replication, min ISR, ISR now.

    Args:
        s: The subject (for fix commands).
        label: The check's name.
        facts: The topic, if it exists and may be described.
        topic_min_isr: Its own ``min.insync.replicas`` (None: not read).
        broker: The broker configs.
        keys: The broker configs of its replication factor and min ISR, used when the topic
            does not exist yet (they apply when it is created) or cannot be described.
        brokers: How many brokers the cluster has.
        what: What it holds, for the message.
    """
    rf_key, isr_key = keys
    cfg = {} if isinstance(broker, Unreadable) else broker

    def number(key: str) -> int | None:
        entry = cfg.get(key)
        return int(entry.value) if entry is not None and entry.value is not None else None

    server = "in server.properties of every broker, read when the topic is created"
    if isinstance(facts, TopicFacts):
        rf = facts.replication_factor
        own = topic_min_isr if isinstance(topic_min_isr, ConfigValue) else None
        min_isr = int(own.value) if own is not None and own.value is not None else number(isr_key)
        source = "the topic"
    else:
        rf_read, min_isr = number(rf_key), number(isr_key)
        if rf_read is None:
            reasons = [facts.reason] + ([broker.reason] if isinstance(broker, Unreadable) else [])
            return Check(label, Status.WARN, "could not read it: " + "; ".join(reasons))
        rf, source = rf_read, f"{rf_key}, not created yet"
        if facts.missing and brokers is not None and rf > brokers:
            return Check(
                label,
                Status.FAIL,
                f"{rf_key}={rf}, but the cluster has {brokers} brokers",
                f"the topic holding {what} cannot be created: the coordinator stays "
                "unavailable (COORDINATOR_NOT_AVAILABLE) and every call that needs it times out",
                f"{rf_key}={brokers} {server}, or add brokers",
            )
    checks = [
        judge_replication(
            label, rf, durable=True, brokers=brokers, what=what, fix=f"{rf_key}=3 {server}; an "
            "existing topic keeps its replicas: raise them with kafka-reassign-partitions.sh",
        )
    ]  # fmt: skip
    if min_isr is not None:
        checks.append(
            judge_min_isr(label, rf, min_isr, durable=True, what=what, fix=f"{isr_key}=2 {server}")
        )
    if isinstance(facts, TopicFacts):
        checks.append(judge_in_sync(label, facts, min_isr, durable=True, writes=True))
    verdict = worst(*checks)
    isr_text = f", min.insync.replicas {min_isr}" if min_isr is not None else ""
    found = f"replication factor {rf}{isr_text} (from {source})"
    if verdict.status is not Status.PASS and verdict.found.startswith("partitions"):
        found += f"; {verdict.found}"
    return Check(label, verdict.status, found, verdict.why, verdict.fix)


def cluster_checks(s: Subject, reader: ClusterReader) -> list[Check]:
    """Reachability, version, and the features and internal topics this profile relies on.

    Returns only the reachability check when the cluster cannot be reached.
    """
    cluster = reader.cluster()
    versions = reader.versions()
    checks = [judge_reachable(s, cluster, versions)]
    if isinstance(cluster, Unreadable):
        return checks
    checks.append(judge_version(versions))
    levels = feature_levels(versions)
    finalized: dict[str, int] | Unreadable = levels if isinstance(levels, Unreadable) else levels[0]
    apis = None if isinstance(levels, Unreadable) else levels[1].apis
    broker = reader.broker_configs()

    def config(key: str) -> ConfigValue | Unreadable:
        if isinstance(broker, Unreadable):
            return broker
        return broker.get(key, Unreadable(f"the broker does not list {key}"))

    brokers = len(cluster.nodes)
    internal: list[tuple[str, str, tuple[str, str], str]] = []
    if s.producer is not None and s.guarantee.value == "exactly_once":
        checks.append(
            judge_transaction_protocol(
                s, finalized, config("transaction.partition.verification.enable")
            )
        )
        internal.append(
            (
                "transaction log (__transaction_state)",
                "__transaction_state",
                ("transaction.state.log.replication.factor", "transaction.state.log.min.isr"),
                "transaction states",
            )
        )
    if s.consumer is not None:
        if s.consumer.group_protocol == "consumer":
            checks.append(
                judge_group_protocol(
                    s, finalized, apis, config("group.coordinator.rebalance.protocols")
                )
            )
        internal.append(
            (
                "offsets topic (__consumer_offsets)",
                "__consumer_offsets",
                ("offsets.topic.replication.factor", "min.insync.replicas"),
                "committed offsets",
            )
        )
    if s.queue is not None:
        checks.append(judge_share_groups(s, finalized, apis))
        internal.append(
            (
                "share-group state (__share_group_state)",
                "__share_group_state",
                (
                    "share.coordinator.state.topic.replication.factor",
                    "share.coordinator.state.topic.min.isr",
                ),
                "acknowledgement states",
            )
        )
    described = reader.topics([topic for _, topic, _, _ in internal])
    for label, topic, keys, what in internal:
        facts = described[topic]
        own = None
        if isinstance(facts, TopicFacts):
            configs = reader.topic_configs(topic)
            own = (
                configs
                if isinstance(configs, Unreadable)
                else configs.get("min.insync.replicas", Unreadable("not listed"))
            )
        checks.append(judge_internal_topic(s, label, facts, own, broker, keys, brokers, what))
    return checks
