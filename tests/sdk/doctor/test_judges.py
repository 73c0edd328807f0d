"""The doctor's judging logic on plain values: what each reading means for each guarantee."""

from __future__ import annotations

from typing import Any

import pytest

from sdk.doctor._access import (
    judge_group_access,
    judge_topic_access,
    judge_transactional_id_access,
)
from sdk.doctor._cluster import (
    judge_group_protocol,
    judge_internal_topic,
    judge_reachable,
    judge_share_groups,
    judge_transaction_protocol,
    judge_version,
)
from sdk.doctor._facts import (
    AclEntry,
    BrokerNode,
    ClusterFacts,
    ConfigValue,
    GroupFacts,
    PartitionFacts,
    TopicFacts,
    Unreadable,
)
from sdk.doctor._groups import judge_group, judge_share_configs, judge_share_limits
from sdk.doctor._replication import judge_min_isr, judge_replication
from sdk.doctor._report import Status
from sdk.doctor._subject import Subject, subject_of
from sdk.doctor._topics import (
    judge_exists,
    judge_in_sync,
    judge_message_size,
    judge_unclean,
)
from sdk.doctor._transactions import judge_poll_interval, judge_transaction_timeout
from sdk.doctor._wire import CONSUMER_GROUP_HEARTBEAT, SHARE_GROUP_HEARTBEAT, BrokerVersions
from sdk.errors import AuthorizationError, UnknownTopicError
from sdk.profiles import (
    ConsumerProfile,
    ProcessingProfile,
    ProducerProfile,
    QueueProfile,
    SecurityProfile,
)

BS = "kafka-1:9092,kafka-2:9092"
ALL_TOPIC_OPS = frozenset({"READ", "WRITE", "DESCRIBE"})


def producer(guarantee: str = "at_least_once", **extra: Any) -> Subject:
    if guarantee == "exactly_once":
        extra.setdefault("transactional_id", "orders-0")
    return subject_of(
        ProducerProfile(guarantee=guarantee, bootstrap_servers=BS, **extra), ["orders"]
    )


def consumer(guarantee: str = "at_least_once", **extra: Any) -> Subject:
    return subject_of(
        ConsumerProfile(guarantee=guarantee, bootstrap_servers=BS, group_id="g", **extra),
        ["orders"],
    )


def queue(**extra: Any) -> Subject:
    return subject_of(
        QueueProfile(guarantee="at_least_once", bootstrap_servers=BS, group_id="jobs", **extra),
        ["jobs"],
    )


def topic(rf: int = 3, isr: int | None = None, partitions: int = 3, **kw: Any) -> TopicFacts:
    isr = rf if isr is None else isr
    parts = tuple(
        PartitionFacts(p, kw.get("leader", 1), tuple(range(1, rf + 1)), tuple(range(1, isr + 1)))
        for p in range(partitions)
    )
    return TopicFacts("orders", parts, kw.get("ops", ALL_TOPIC_OPS))


# ---------------------------------------------------------------- replication and min ISR
def test_replication_three_passes_and_one_warns_naming_the_risk() -> None:
    ok = judge_replication("r", 3, durable=True, brokers=3, what="acknowledged records")
    one = judge_replication("r", 1, durable=True, brokers=1, what="acknowledged records")
    two = judge_replication("r", 2, durable=True, brokers=3, what="acknowledged records")
    assert ok.status is Status.PASS and ok.found == "replication factor 3"
    assert one.status is Status.WARN
    assert "one broker's disk" in one.why and "offline" in one.why
    assert "add brokers first (the cluster has 1" in one.fix
    assert two.status is Status.WARN and "second failure" in two.why


def test_at_most_once_accepts_replication_one() -> None:
    check = judge_replication("r", 1, durable=False, brokers=1, what="records")
    assert check.status is Status.PASS and "at_most_once accepts" in check.found


@pytest.mark.parametrize(
    ("rf", "min_isr", "status", "text"),
    [
        (3, 2, Status.PASS, ""),
        (3, 1, Status.WARN, "leader alone"),
        (3, 3, Status.WARN, "stops every acks=all write"),
        (2, 3, Status.FAIL, "NOT_ENOUGH_REPLICAS"),
        (1, 1, Status.PASS, ""),
    ],
)
def test_min_isr_against_the_replication_factor(
    rf: int, min_isr: int, status: Status, text: str
) -> None:
    check = judge_min_isr("m", rf, min_isr, durable=True, what="records", fix="FIX")
    assert check.status is status
    assert text in check.why
    assert check.found.startswith(f"min.insync.replicas {min_isr} with replication factor {rf}")
    if status is not Status.PASS:
        assert check.fix == "FIX"


def test_min_isr_is_not_used_by_at_most_once() -> None:
    check = judge_min_isr("m", 2, 3, durable=False, what="records", fix="FIX")
    assert check.status is Status.PASS and "acks 0 or 1" in check.found


# ---------------------------------------------------------------- topics
def test_unclean_election_fails_durable_guarantees_and_warns_at_most_once() -> None:
    on = ConfigValue("true", "DYNAMIC_TOPIC_CONFIG")
    fail = judge_unclean(producer(), "orders", on)
    warn = judge_unclean(producer("at_most_once"), "orders", on)
    assert fail.status is Status.FAIL and "truncated" in fail.why
    assert fail.fix == (
        "kafka-configs.sh --bootstrap-server kafka-1:9092 --entity-type topics --entity-name "
        "orders --alter --add-config unclean.leader.election.enable=false"
    )
    assert warn.status is Status.WARN
    inherited = judge_unclean(producer(), "orders", ConfigValue("true", "STATIC_BROKER_CONFIG"))
    assert "(server.properties)" in inherited.found
    assert "--entity-default" in inherited.fix
    off = judge_unclean(producer(), "orders", ConfigValue("false", "DEFAULT_CONFIG"))
    assert off.status is Status.PASS and off.found.endswith("(Kafka's default)")


def test_a_missing_topic_fails_with_the_create_command() -> None:
    missing = Unreadable("it does not exist", UnknownTopicError("x"))
    check = judge_exists(producer(), "orders", missing, ["output"])
    assert check.status is Status.FAIL and "UnknownTopicError" in check.why
    assert check.fix == (
        "kafka-topics.sh --bootstrap-server kafka-1:9092 --create --topic orders --partitions 6 "
        "--replication-factor 3 --config min.insync.replicas=2"
    )
    denied = judge_exists(
        consumer(), "orders", Unreadable("no", AuthorizationError("x")), ["input"]
    )
    assert denied.status is Status.FAIL and "--operation Describe --topic orders" in denied.fix
    assert judge_exists(producer(), "orders", topic(), ["output"]).found == "3 partitions (output)"


def test_partitions_now_offline_below_min_isr_and_under_replicated() -> None:
    offline = judge_in_sync("n", topic(leader=None), 2, durable=True, writes=True)
    below = judge_in_sync("n", topic(rf=3, isr=1), 2, durable=True, writes=True)
    below_input = judge_in_sync("n", topic(rf=3, isr=1), 2, durable=True, writes=False)
    under = judge_in_sync("n", topic(rf=3, isr=2), 2, durable=True, writes=True)
    full = judge_in_sync("n", topic(rf=3), 2, durable=True, writes=True)
    assert offline.status is Status.FAIL and "0, 1, 2 have no leader" in offline.found
    assert below.status is Status.FAIL and "NOT_ENOUGH_REPLICAS" in below.why
    assert below_input.status is Status.WARN  # upstream producers are blocked, not this reader
    assert under.status is Status.WARN and "under-replicated" in under.found
    assert full.status is Status.PASS and full.found == "3 partitions fully in sync"


def test_the_producers_message_size_against_the_topics() -> None:
    limit = ConfigValue("1048588", "DEFAULT_CONFIG")
    assert judge_message_size("t", 1_000_000, limit, producer()).status is Status.PASS
    big = judge_message_size("t", 2_000_000, limit, producer())
    assert big.status is Status.WARN and "RecordTooLargeError" in big.why
    assert "max.message.bytes=2000000" in big.fix


# ---------------------------------------------------------------- transactions
def test_a_transaction_timeout_above_the_broker_maximum_fails() -> None:
    cap = ConfigValue("900000", "DEFAULT_CONFIG")
    fail = judge_transaction_timeout(1_000_000, cap)
    assert fail.status is Status.FAIL and "INVALID_TRANSACTION_TIMEOUT" in fail.why
    assert fail.fix.startswith("transaction_timeout_ms: 900000")
    assert judge_transaction_timeout(60_000, cap).status is Status.PASS


def test_poll_interval_longer_than_the_transaction_timeout_warns() -> None:
    assert judge_poll_interval(60_000, 60_000).status is Status.PASS
    warn = judge_poll_interval(300_000, 60_000)
    assert warn.status is Status.WARN and "never moves on" in warn.why


def test_transaction_protocol_needs_kip_890() -> None:
    s = producer("exactly_once")
    on, off = ConfigValue("true", "DEFAULT_CONFIG"), ConfigValue("false", "DEFAULT_CONFIG")
    assert judge_transaction_protocol(s, {"transaction.version": 2}, off).status is Status.PASS
    assert judge_transaction_protocol(s, {"transaction.version": 0}, on).status is Status.PASS
    warn = judge_transaction_protocol(s, {"transaction.version": 1}, off)
    assert warn.status is Status.WARN and "hanging transaction" in warn.why
    assert "upgrade --feature transaction.version=2" in warn.fix


# ---------------------------------------------------------------- features and version
def versions(finalized: dict[str, int], apis: tuple[int, ...] = (68, 76)) -> dict[int, Any]:
    return {1: BrokerVersions({a: (0, 1) for a in apis}, finalized)}


def test_version_names_the_release() -> None:
    check = judge_version(versions({"metadata.version": 30, "share.version": 1}))
    assert check.status is Status.PASS
    assert check.found.startswith("Kafka 4.3 (metadata.version 4.3-IV0, level 30)")
    assert judge_version(versions({})).status is Status.WARN  # ZooKeeper mode
    assert judge_version({1: Unreadable("refused")}).status is Status.WARN


def test_share_groups_off_fails_a_queue_with_the_feature_command() -> None:
    s = queue()
    off = judge_share_groups(s, {"metadata.version": 30}, {SHARE_GROUP_HEARTBEAT: (1, 1)})
    assert off.status is Status.FAIL and off.found == "share.version 0"
    assert off.fix == (
        "kafka-features.sh --bootstrap-server kafka-1:9092 upgrade --feature share.version=1"
    )
    old = judge_share_groups(s, {"metadata.version": 22}, {})
    assert old.status is Status.FAIL and "4.2 or later" in old.fix
    preview = judge_share_groups(  # Kafka 4.1 with share.version=1: joins, gets no records
        s, {"share.version": 1, "metadata.version": 27}, {SHARE_GROUP_HEARTBEAT: (1, 1)}
    )
    assert (
        preview.status is Status.FAIL and preview.fix == "upgrade the cluster to Kafka 4.2 or later"
    )
    on = judge_share_groups(s, {"share.version": 1}, {SHARE_GROUP_HEARTBEAT: (1, 1)})
    assert on.status is Status.PASS


def test_the_consumer_group_protocol_needs_group_version_and_the_config() -> None:
    s = consumer(group_protocol="consumer")
    apis = {CONSUMER_GROUP_HEARTBEAT: (0, 1)}
    enabled = ConfigValue("classic,consumer,streams", "DEFAULT_CONFIG")
    assert judge_group_protocol(s, {"group.version": 1}, apis, enabled).status is Status.PASS
    fail = judge_group_protocol(s, {"group.version": 0}, apis, ConfigValue("classic", "x"))
    assert fail.status is Status.FAIL and "upgrade --feature group.version=1" in fail.fix
    unread = judge_group_protocol(s, {"group.version": 1}, apis, Unreadable("denied"))
    assert unread.status is Status.WARN


def test_reachability() -> None:
    s = producer()
    cluster = ClusterFacts("id", 1, (BrokerNode(1, "h", 1), BrokerNode(2, "h", 2)), None)
    ok = judge_reachable(s, cluster, {1: BrokerVersions(), 2: BrokerVersions()})
    assert ok.status is Status.PASS and ok.found.startswith("2 brokers answered (1 h:1, 2 h:2)")
    one_silent = judge_reachable(s, cluster, {1: BrokerVersions(), 2: Unreadable("refused")})
    assert one_silent.status is Status.WARN and "advertised.listeners" in one_silent.fix
    down = judge_reachable(s, Unreadable("timed out"), {})
    assert down.status is Status.FAIL


# ---------------------------------------------------------------- internal topics
def test_an_internal_topic_that_cannot_be_created_fails() -> None:
    broker = {
        "transaction.state.log.replication.factor": ConfigValue("3", "DEFAULT_CONFIG"),
        "transaction.state.log.min.isr": ConfigValue("2", "DEFAULT_CONFIG"),
    }
    keys = ("transaction.state.log.replication.factor", "transaction.state.log.min.isr")
    missing = Unreadable("it does not exist", UnknownTopicError("x"))
    s = producer("exactly_once")
    fail = judge_internal_topic(s, "log", missing, None, broker, keys, 1, "transaction states")
    assert fail.status is Status.FAIL and "COORDINATOR_NOT_AVAILABLE" in fail.why
    ok = judge_internal_topic(s, "log", missing, None, broker, keys, 3, "transaction states")
    assert ok.status is Status.PASS
    assert ok.found == (
        "replication factor 3, min.insync.replicas 2 (from "
        "transaction.state.log.replication.factor, not created yet)"
    )
    own = ConfigValue("1", "DYNAMIC_TOPIC_CONFIG")
    weak = judge_internal_topic(s, "log", topic(rf=3), own, broker, keys, 3, "transaction states")
    assert weak.status is Status.WARN and "min.insync.replicas 1" in weak.found


# ---------------------------------------------------------------- groups and queues
def group(state: str = "STABLE", members: int = 2, kind: str = "CLASSIC", **kw: Any) -> GroupFacts:
    ops = kw.get("ops", frozenset({"READ", "DESCRIBE"}))
    return GroupFacts("g", state, kind, tuple(f"c{i}" for i in range(members)), "range", ops)


def test_group_state_and_a_queue_on_a_consumer_groups_id() -> None:
    assert judge_group(consumer(), group()).status is Status.PASS
    taken = judge_group(queue(), group())
    assert taken.status is Status.FAIL and "one namespace" in taken.why
    assert judge_group(queue(), group("DEAD", 0)).status is Status.PASS
    denied = judge_group(consumer(), Unreadable("no", AuthorizationError("x")))
    assert denied.status is Status.FAIL and "--operation Read --group g" in denied.fix


SHARE_BROKER = {
    "group.share.record.lock.duration.ms": ConfigValue("30000", "DEFAULT_CONFIG"),
    "group.share.min.record.lock.duration.ms": ConfigValue("15000", "DEFAULT_CONFIG"),
    "group.share.max.record.lock.duration.ms": ConfigValue("60000", "DEFAULT_CONFIG"),
    "group.share.delivery.count.limit": ConfigValue("5", "DEFAULT_CONFIG"),
    "group.share.min.delivery.count.limit": ConfigValue("2", "DEFAULT_CONFIG"),
    "group.share.max.delivery.count.limit": ConfigValue("10", "DEFAULT_CONFIG"),
}


def test_share_limits_against_the_broker_bounds() -> None:
    ok = QueueProfile(guarantee="at_least_once", bootstrap_servers=BS, group_id="q")
    assert judge_share_limits(ok, SHARE_BROKER).status is Status.PASS
    short = ok.model_copy(update={"record_lock_duration_ms": 5_000})
    fail = judge_share_limits(short, SHARE_BROKER)
    assert fail.status is Status.FAIL and "between 15000 and 60000" in fail.fix
    dlq = QueueProfile(
        guarantee="at_least_once",
        bootstrap_servers=BS,
        group_id="q",
        failure={"attempts": 6, "on_failure": "dlq", "dlq_topic": "dead"},
    )
    archived = judge_share_limits(dlq, SHARE_BROKER)
    assert archived.status is Status.FAIL and "without reaching the dead-letter" in archived.why
    assert judge_share_limits(ok, Unreadable("denied")).status is Status.WARN


def test_share_configs_must_be_the_profiles_when_it_does_not_set_them() -> None:
    profile = QueueProfile(
        guarantee="at_least_once", bootstrap_servers=BS, group_id="q", apply_group_config=False
    )
    s = subject_of(profile, ["jobs"])
    latest = {
        "share.auto.offset.reset": ConfigValue("latest", "DEFAULT_CONFIG"),
        "share.isolation.level": ConfigValue("read_committed", "GROUP_CONFIG"),
    }
    warn = judge_share_configs(s, profile, latest)
    assert warn.status is Status.WARN
    assert "share.auto.offset.reset=latest (profile: earliest)" in warn.found
    assert "--entity-type groups --entity-name q" in warn.fix


# ---------------------------------------------------------------- security
def sasl(kind: str = "producer", guarantee: str = "at_least_once", **extra: Any) -> Subject:
    security = SecurityProfile(
        protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512", sasl_username="app",
        sasl_password="secret",
    )  # fmt: skip
    if kind == "producer":
        if guarantee == "exactly_once":
            extra.setdefault("transactional_id_prefix", "orders-")
        return subject_of(
            ProducerProfile(guarantee=guarantee, bootstrap_servers=BS, security=security, **extra),
            ["orders"],
        )
    return subject_of(
        ConsumerProfile(guarantee=guarantee, bootstrap_servers=BS, group_id="g", security=security),
        ["orders"],
    )


def test_topic_access_names_the_missing_operation_and_the_acl_command() -> None:
    reader = topic(ops=frozenset({"DESCRIBE", "WRITE"}))
    ok = judge_topic_access(sasl(), reader, ["output"])
    assert ok.status is Status.PASS and ok.found == "User:app may DESCRIBE, WRITE"
    fail = judge_topic_access(sasl("consumer"), reader, ["input"])
    assert fail.status is Status.FAIL and fail.found.startswith("User:app may not READ")
    assert fail.fix == (
        "kafka-acls.sh --bootstrap-server kafka-1:9092 --command-config admin.properties --add "
        "--allow-principal User:app --operation Read --topic orders"
    )
    unknown = judge_topic_access(sasl(), topic(ops=None), ["output"])
    assert unknown.status is Status.WARN


def test_group_access() -> None:
    assert judge_group_access(sasl("consumer"), group()).status is Status.PASS
    fail = judge_group_access(sasl("consumer"), group(ops=frozenset({"DESCRIBE"})))
    assert fail.status is Status.FAIL and "--operation Read --group g" in fail.fix


def acl(name: str, pattern: str = "LITERAL", permission: str = "ALLOW", **kw: str) -> AclEntry:
    return AclEntry(
        "TRANSACTIONAL_ID", name, pattern, kw.get("principal", "User:app"), "*",
        kw.get("operation", "WRITE"), permission,
    )  # fmt: skip


def test_transactional_id_access_from_the_acls() -> None:
    s = sasl("producer", "exactly_once")
    cluster = ClusterFacts("id", 1, (), frozenset({"DESCRIBE"}))
    assert judge_transactional_id_access(s, cluster, [acl("orders-", "PREFIXED")]).status is (
        Status.PASS
    )
    assert judge_transactional_id_access(s, cluster, [acl("*")]).status is Status.PASS
    literal_only = judge_transactional_id_access(s, cluster, [acl("orders-0")])
    assert literal_only.status is Status.FAIL  # a prefix profile needs every id of the prefix
    assert "--resource-pattern-type prefixed" in literal_only.fix
    denied = [acl("orders-", "PREFIXED"), acl("*", permission="DENY")]
    assert judge_transactional_id_access(s, cluster, denied).status is Status.FAIL
    unread = judge_transactional_id_access(s, cluster, Unreadable("needs DESCRIBE"))
    assert unread.status is Status.WARN
    superuser = ClusterFacts("id", 1, (), frozenset({"DESCRIBE", "CLUSTER_ACTION"}))
    assert judge_transactional_id_access(s, superuser, []).status is Status.PASS


# ---------------------------------------------------------------- no PASS without a reading
UNREAD = Unreadable("could not")


@pytest.mark.parametrize(
    "judge",
    [
        lambda: judge_unclean(producer(), "t", UNREAD),
        lambda: judge_message_size("t", 1, UNREAD, producer()),
        lambda: judge_transaction_timeout(60_000, UNREAD),
        lambda: judge_transaction_protocol(producer("exactly_once"), UNREAD, UNREAD),
        lambda: judge_group_protocol(consumer(group_protocol="consumer"), UNREAD, None, UNREAD),
        lambda: judge_share_groups(queue(), UNREAD, None),
        lambda: judge_version({1: UNREAD}),
        lambda: judge_group(consumer(), UNREAD),
        lambda: judge_share_limits(queue().queue, UNREAD),  # type: ignore[arg-type]
        lambda: judge_exists(producer(), "t", UNREAD, ["output"]),
        lambda: judge_internal_topic(producer(), "x", UNREAD, None, UNREAD, ("a", "b"), 3, "x"),
        lambda: judge_transactional_id_access(
            sasl("producer", "exactly_once"), ClusterFacts("i", 1, (), None), UNREAD
        ),
    ],
)
def test_nothing_unread_passes(judge: Any) -> None:
    check = judge()
    assert check.status is not Status.PASS, check
    assert "could not" in check.found or "no answer" in check.found


def test_a_processing_profile_is_both_sides() -> None:
    profile = ProcessingProfile(
        guarantee="exactly_once",
        bootstrap_servers=BS,
        consumer={"group_id": "g", "failure": {"on_failure": "dlq", "dlq_topic": "dead"}},
        producer={"transactional_id_prefix": "p-"},
    )
    s = subject_of(profile, ["in", "^re.*"], ["out"])
    assert (s.kind, s.inputs, s.outputs, s.patterns) == (
        "processing",
        ("in",),
        ("out", "dead"),
        ("^re.*",),
    )
    assert s.producer is profile.producer and s.consumer is profile.consumer
    assert subject_of(
        ProducerProfile(guarantee="at_least_once", bootstrap_servers=BS), ["o"]
    ).outputs == ("o",)
