"""Security: may the profile's principal do what the profile needs, as the broker says.

Read from the authorized operations that describe_topics / describe_consumer_groups /
describe_cluster return on request, never by trial writes. A transactional id has no
authorized-operations API: its ACLs are read with describe_acls when the principal may
describe the cluster's ACLs, and the check says so when it may not.
"""

from __future__ import annotations

from collections.abc import Sequence

from sdk.doctor._facts import AclEntry, ClusterFacts, GroupFacts, TopicFacts, Unreadable
from sdk.doctor._report import Check, Status
from sdk.doctor._subject import Subject

__all__ = ["judge_group_access", "judge_topic_access", "judge_transactional_id_access"]

_SUPER = "CLUSTER_ACTION"
"""A cluster operation that only brokers and super users hold in practice."""


def _acl(s: Subject, operations: Sequence[str], resource: str) -> str:
    principal = s.principal or "User:<the profile's principal>"
    ops = " ".join(f"--operation {op.title().replace('_', '')}" for op in operations)
    return s.tool("kafka-acls.sh", f"--add --allow-principal {principal} {ops} {resource}")


def _who(s: Subject) -> str:
    return s.principal or "the profile's principal"


def judge_topic_access(s: Subject, facts: TopicFacts, roles: Sequence[str]) -> Check:
    """READ on an input topic, WRITE on an output, DESCRIBE on both."""
    name = f"topic {facts.name}: access"
    reads = "input" in roles
    writes = "output" in roles or "dead-letter" in roles
    needed = ["DESCRIBE"] + (["READ"] if reads else []) + (["WRITE"] if writes else [])
    ops = facts.operations
    if ops is None:
        return Check(
            name,
            Status.WARN,
            "the broker reported no authorized operations for the topic",
            "without them the doctor cannot tell whether the principal may "
            + " and ".join(op.lower() for op in needed[1:])
            + " it",
        )
    missing = [op for op in needed if op not in ops]
    if not missing:
        return Check(name, Status.PASS, f"{_who(s)} may {', '.join(needed)}")
    verb = " and ".join(v for v, on in (("reads", reads), ("writes", writes)) if on)
    return Check(
        name,
        Status.FAIL,
        f"{_who(s)} may not {', '.join(missing)} (allowed: {', '.join(sorted(ops)) or 'nothing'})",
        f"the profile {verb} this topic: the broker refuses it with TOPIC_AUTHORIZATION_FAILED",
        _acl(s, missing, f"--topic {facts.name}"),
    )


def judge_group_access(s: Subject, facts: GroupFacts) -> Check:
    """READ on the group (joining, committing); a queue that sets its configs: ALTER_CONFIGS."""
    name = f"group {facts.group_id}: access"
    needed = ["READ"]
    if s.queue is not None and s.queue.apply_group_config:
        needed.append("ALTER_CONFIGS")
    ops = facts.operations
    if ops is None:
        return Check(
            name, Status.WARN, "the broker reported no authorized operations for the group"
        )
    missing = [op for op in needed if op not in ops]
    if not missing:
        return Check(name, Status.PASS, f"{_who(s)} may {', '.join(needed)}")
    why = (
        "joining the group and committing offsets need READ on it (GROUP_AUTHORIZATION_FAILED)"
        if "READ" in missing
        else "the queue sets the share group's configs at start (apply_group_config) and needs "
        "ALTER_CONFIGS on the group; or turn apply_group_config off and set them elsewhere"
    )
    return Check(
        name,
        Status.FAIL,
        f"{_who(s)} may not {', '.join(missing)} (allowed: {', '.join(sorted(ops))})",
        why,
        _acl(s, missing, f"--group {facts.group_id}"),
    )


def _covers(entry: AclEntry, principal: str, tid: str, prefix: bool) -> bool:
    """Whether the ACL lets ``principal`` write transactional id ``tid``.

    For a prefix profile (``prefix``) it must cover every id that starts with ``tid``.
    """
    if entry.principal not in (principal, "User:*") or entry.host != "*":
        return False
    if entry.operation not in ("WRITE", "ALL"):
        return False
    if entry.pattern == "LITERAL":
        return entry.name == "*" or (entry.name == tid and not prefix)
    if entry.pattern == "PREFIXED":
        return tid.startswith(entry.name)
    return False


def judge_transactional_id_access(
    s: Subject, cluster: ClusterFacts, acls: list[AclEntry] | Unreadable
) -> Check:
    """WRITE on the producer's transactional id (or every id with its prefix)."""
    producer = s.producer
    assert producer is not None
    prefix = producer.transactional_id is None
    tid = producer.transactional_id or producer.transactional_id_prefix or ""
    shown = f"prefix {tid!r}" if prefix else repr(tid)
    name = "transactional id: access"
    fix = s.tool(
        "kafka-acls.sh",
        f"--add --allow-principal {s.principal or 'User:<the profile principal>'} "
        f"--operation Write --operation Describe --transactional-id {tid}"
        + (" --resource-pattern-type prefixed" if prefix else ""),
    )
    ops = cluster.operations or frozenset()
    if _SUPER in ops:
        return Check(
            name,
            Status.PASS,
            f"{_who(s)} holds every cluster operation, CLUSTER_ACTION included: a super user, "
            "or a cluster without an authorizer",
        )
    if isinstance(acls, Unreadable):
        return Check(
            name,
            Status.WARN,
            f"could not read the ACLs of transactional id {shown}: {acls.reason}",
            "no admin API reports the operations allowed on a transactional id; without WRITE "
            "on it init_transactions() fails (TRANSACTIONAL_ID_AUTHORIZATION_FAILED)",
            "run the doctor with a principal that may describe ACLs, or check: "
            + s.tool("kafka-acls.sh", f"--list --transactional-id {tid}"),
        )
    principal = s.principal
    if principal is None:
        return Check(
            name,
            Status.WARN,
            f"{len(acls)} transactional-id ACLs listed, but the profile's principal is not "
            "known to the client (TLS certificate, OAUTHBEARER)",
            "",
            s.tool("kafka-acls.sh", f"--list --transactional-id {tid}"),
        )
    denied = [a for a in acls if a.permission == "DENY" and _covers(a, principal, tid, prefix)]
    allowed = [a for a in acls if a.permission == "ALLOW" and _covers(a, principal, tid, prefix)]
    if allowed and not denied:
        rule = allowed[0]
        return Check(
            name,
            Status.PASS,
            f"{principal} may WRITE transactional id {shown} ({rule.pattern.lower()} ACL "
            f"{rule.name!r})",
        )
    return Check(
        name,
        Status.FAIL,
        f"no ACL lets {principal} WRITE transactional id {shown}"
        + (" (a DENY applies)" if denied else ""),
        "init_transactions() fails with TRANSACTIONAL_ID_AUTHORIZATION_FAILED: the exactly_once "
        "producer never starts",
        fix,
    )
