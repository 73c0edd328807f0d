"""Per-topic checks: exists, replication, min.insync.replicas, unclean election, ISR now, size."""

from __future__ import annotations

from collections.abc import Sequence

from sdk.doctor._admin import ClusterReader
from sdk.doctor._facts import ConfigValue, TopicFacts, Unreadable
from sdk.doctor._replication import judge_min_isr, judge_replication
from sdk.doctor._report import Check, Status
from sdk.doctor._subject import Subject

__all__ = [
    "LIBRDKAFKA_MESSAGE_MAX_BYTES",
    "judge_exists",
    "judge_in_sync",
    "judge_message_size",
    "judge_unclean",
    "topic_checks",
]

LIBRDKAFKA_MESSAGE_MAX_BYTES = 1_000_000
"""librdkafka's default ``message.max.bytes`` (the largest request it builds)."""

_LISTED = 8  # partitions named in a finding before "..."


def _partitions(ids: list[int], verb: tuple[str, str]) -> str:
    """``partition 0 has`` / ``partitions 0, 1 have`` (``verb``: singular, plural)."""
    shown = ", ".join(str(i) for i in ids[:_LISTED])
    shown += f" and {len(ids) - _LISTED} more" if len(ids) > _LISTED else ""
    return f"partition {shown} {verb[0]}" if len(ids) == 1 else f"partitions {shown} {verb[1]}"


def _configs_fix(s: Subject, topic: str, setting: str) -> str:
    return s.tool(
        "kafka-configs.sh",
        f"--entity-type topics --entity-name {topic} --alter --add-config {setting}",
    )


def _min_isr_fix(s: Subject, topic: str, rf: int) -> str:
    if rf >= 3:
        return _configs_fix(s, topic, "min.insync.replicas=2")
    return (
        "raise the replication factor to 3 (kafka-reassign-partitions.sh), then\n"
        + _configs_fix(s, topic, "min.insync.replicas=2")
    )


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def judge_exists(
    s: Subject, topic: str, facts: TopicFacts | Unreadable, roles: Sequence[str]
) -> Check:
    """Does the topic exist, as the profile's principal sees it.

    Args:
        s: The subject.
        topic: The topic.
        facts: What describe_topics said.
        roles: What the profile does with it: ``input``, ``output``, ``dead-letter``.
    """
    name = f"topic {topic}: exists"
    if isinstance(facts, TopicFacts):
        return Check(
            name, Status.PASS, f"{_plural(len(facts.partitions), 'partition')} ({', '.join(roles)})"
        )
    if facts.missing:
        rf = 3 if s.durable else 1
        create = s.tool(
            "kafka-topics.sh",
            f"--create --topic {topic} --partitions 6 --replication-factor {rf}"
            + (" --config min.insync.replicas=2" if s.durable else ""),
        )
        why = (
            "the producer refuses to send to it (UnknownTopicError)"
            if "input" not in roles
            else "the consumer waits for partitions that never come"
        )
        return Check(
            name,
            Status.FAIL,
            "it does not exist",
            f"{why}; auto-creation would make it with the broker's defaults, not the "
            "replication this guarantee needs",
            create,
        )
    if facts.denied:
        return Check(
            name,
            Status.FAIL,
            "not authorized to describe it (or it does not exist)",
            "DESCRIBE comes with READ and WRITE: a principal that may not describe the topic "
            "may neither read nor write it",
            _acl_fix(s, "Describe", f"--topic {topic}"),
        )
    return Check(name, Status.WARN, f"could not read it: {facts.reason}")


def _acl_fix(s: Subject, operation: str, resource: str) -> str:
    principal = s.principal or "User:<the profile's principal>"
    return s.tool(
        "kafka-acls.sh", f"--add --allow-principal {principal} --operation {operation} {resource}"
    )


def judge_unclean(s: Subject, topic: str, value: ConfigValue | Unreadable) -> Check:
    """``unclean.leader.election.enable`` of a topic."""
    name = f"topic {topic}: unclean leader election"
    if isinstance(value, Unreadable):
        return Check(
            name, Status.WARN, f"could not read unclean.leader.election.enable: {value.reason}"
        )
    enabled = str(value.value).lower() == "true"
    found = f"unclean.leader.election.enable={str(value.value).lower()} ({value.origin})"
    if not enabled:
        return Check(name, Status.PASS, found)
    fix = _configs_fix(s, topic, "unclean.leader.election.enable=false")
    if not value.own:
        fix += "\n" + s.tool(
            "kafka-configs.sh",
            "--entity-type brokers --entity-default --alter --add-config "
            "unclean.leader.election.enable=false",
        )
    return Check(
        name,
        Status.FAIL if s.durable else Status.WARN,
        found,
        "after the leader dies, a replica that is not in sync may become leader: the records "
        "it lacks, acknowledged ones included, are truncated away"
        + ("" if s.durable else " (at_most_once accepts the loss; readers may still see gaps)"),
        fix,
    )


def judge_in_sync(
    name: str, facts: TopicFacts, min_isr: int | None, *, durable: bool, writes: bool
) -> Check:
    """The partitions' state now: offline, below min.insync.replicas, under-replicated.

    Args:
        name: The check's name.
        facts: The topic as described.
        min_isr: Its effective ``min.insync.replicas`` (None: unread).
        durable: Writes use acks=all.
        writes: This profile writes to it (below min ISR only fails a writer).
    """
    offline = [p.partition for p in facts.partitions if p.leader is None]
    below = [
        p.partition
        for p in facts.partitions
        if p.leader is not None and min_isr is not None and len(p.isr) < min_isr
    ]
    under = [p.partition for p in facts.partitions if len(p.isr) < len(p.replicas)]
    restart = (
        "bring the missing brokers back (a replica catches up on its own once its broker runs)"
    )
    if offline:
        return Check(
            name,
            Status.FAIL,
            f"{_partitions(offline, ('has', 'have'))} no leader (offline)",
            "nothing can be written to or read from an offline partition",
            restart,
        )
    if below and durable and writes:
        complete = all(len(p.isr) == len(p.replicas) for p in facts.partitions)
        return Check(
            name,
            Status.FAIL,
            f"{_partitions(below, ('has', 'have'))} fewer in-sync replicas than "
            f"min.insync.replicas {min_isr}",
            "acks=all writes to them are refused with NOT_ENOUGH_REPLICAS now",
            "every replica is in sync: lower min.insync.replicas (see its check)"
            if complete
            else restart,
        )
    if under:
        return Check(
            name,
            Status.WARN,
            f"{_partitions(under, ('is', 'are'))} under-replicated (ISR smaller than the "
            "replica set)",
            "one more broker failure may take them offline or below min.insync.replicas; do "
            "not restart another broker until they catch up",
            restart,
        )
    read = "" if min_isr is not None else " (min.insync.replicas unread)"
    return Check(
        name, Status.PASS, f"{_plural(len(facts.partitions), 'partition')} fully in sync{read}"
    )


def judge_message_size(
    topic: str, producer_max: int, topic_max: ConfigValue | Unreadable, s: Subject
) -> Check:
    """The producer's ``message.max.bytes`` against the topic's ``max.message.bytes``."""
    name = f"topic {topic}: message size"
    if isinstance(topic_max, Unreadable) or topic_max.value is None:
        reason = topic_max.reason if isinstance(topic_max, Unreadable) else "no value"
        return Check(name, Status.WARN, f"could not read max.message.bytes: {reason}")
    limit = int(topic_max.value)
    found = f"producer message.max.bytes {producer_max}, topic max.message.bytes {limit}"
    if producer_max <= limit:
        return Check(name, Status.PASS, found)
    return Check(
        name,
        Status.WARN,
        found,
        "a batch larger than the topic allows but within the producer's limit is accepted by "
        "send() and refused by the broker (RecordTooLargeError at delivery)",
        f"extras: {{message.max.bytes: {limit}}} in the profile, or "
        + _configs_fix(s, topic, f"max.message.bytes={producer_max}"),
    )


def topic_checks(
    s: Subject,
    reader: ClusterReader,
    topic: str,
    facts: TopicFacts | Unreadable,
    roles: Sequence[str],
) -> list[Check]:
    """Every check of one topic (``roles``: input, output, dead-letter)."""
    checks = [judge_exists(s, topic, facts, roles)]
    if not isinstance(facts, TopicFacts):
        return checks
    cluster = reader.cluster()
    brokers = None if isinstance(cluster, Unreadable) else len(cluster.nodes)
    rf = facts.replication_factor
    writes = "output" in roles or "dead-letter" in roles
    what = "acknowledged records" if writes else "records not yet consumed"
    checks.append(
        judge_replication(
            f"topic {topic}: replication", rf, durable=s.durable, brokers=brokers, what=what
        )
    )
    configs = reader.topic_configs(topic)
    min_isr: int | None = None
    if isinstance(configs, Unreadable):
        checks.append(
            Check(
                f"topic {topic}: min.insync.replicas",
                Status.WARN,
                f"could not read min.insync.replicas: {configs.reason}",
            )
        )
        checks.append(judge_unclean(s, topic, configs))
    else:
        entry = configs.get("min.insync.replicas")
        if entry is not None and entry.value is not None:
            min_isr = int(entry.value)
            checks.append(
                judge_min_isr(
                    f"topic {topic}: min.insync.replicas",
                    rf,
                    min_isr,
                    durable=s.durable,
                    what=what,
                    fix=_min_isr_fix(s, topic, rf),
                    writes=writes,
                )
            )
        unclean = configs.get("unclean.leader.election.enable")
        checks.append(
            judge_unclean(s, topic, unclean if unclean is not None else Unreadable("not listed"))
        )
    checks.append(
        judge_in_sync(
            f"topic {topic}: in sync now", facts, min_isr, durable=s.durable, writes=writes
        )
    )
    if writes:
        producer_max = int(s.extras.get("message.max.bytes", LIBRDKAFKA_MESSAGE_MAX_BYTES))
        if "output" not in roles:  # the dead-letter producer has its own config
            producer_max = LIBRDKAFKA_MESSAGE_MAX_BYTES
        limit = (
            configs
            if isinstance(configs, Unreadable)
            else configs.get("max.message.bytes", Unreadable("not listed"))
        )
        checks.append(judge_message_size(topic, producer_max, limit, s))
    return checks
