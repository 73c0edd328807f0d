"""Group checks: the consumer group now, and a queue's share-group settings against the broker."""

from __future__ import annotations

from collections.abc import Mapping

from sdk.doctor._facts import ConfigValue, GroupFacts, Unreadable
from sdk.doctor._report import Check, Status
from sdk.doctor._subject import Subject
from sdk.profiles import QueueProfile

__all__ = ["judge_group", "judge_share_configs", "judge_share_limits"]

_IDLE = ("EMPTY", "DEAD")


def judge_group(s: Subject, facts: GroupFacts | Unreadable) -> Check:
    """The group's state and members now (a queue: whether a consumer group holds the id)."""
    group = s.group_id or ""
    name = f"group {group}"
    if isinstance(facts, Unreadable):
        status = Status.FAIL if facts.denied else Status.WARN
        return Check(
            name,
            status,
            f"could not describe it: {facts.reason}",
            "DESCRIBE comes with READ: a principal that may not describe the group may not "
            "join it or commit its offsets"
            if facts.denied
            else "",
            _group_acl(s) if facts.denied else "",
        )
    members = len(facts.members)
    clients = ", ".join(sorted(set(facts.members))[:5])
    detail = f"state {facts.state}, {members} members" + (f" ({clients})" if clients else "")
    if facts.state == "DEAD":
        detail = "no consumer group has this id yet (created when the first member joins)"
    if s.queue is not None:
        if facts.state not in _IDLE or members:
            return Check(
                name,
                Status.FAIL,
                f"a consumer group ({facts.group_type.lower()}) holds this id: {detail}",
                "group ids are one namespace: a share group cannot use the id of a consumer "
                "group, so the queue's members are refused",
                "give the queue profile another group_id",
            )
        return Check(
            name,
            Status.PASS,
            f"no consumer group holds this id ({facts.state.lower()}); share groups are not "
            "described by confluent-kafka's admin API",
        )
    wanted = (
        "CONSUMER"
        if s.consumer is not None and s.consumer.group_protocol == "consumer"
        else "CLASSIC"
    )
    if members and facts.group_type not in (wanted, "UNKNOWN"):
        return Check(
            name,
            Status.WARN,
            f"{detail}; type {facts.group_type}, the profile uses {wanted.lower()}",
            "members of both protocols in one group rely on the broker converting the group "
            "(group.consumer.migration.policy); finish the rollout to one protocol",
            "roll every member to the same group_protocol",
        )
    return Check(name, Status.PASS, f"{detail}; type {facts.group_type}")


def _group_acl(s: Subject) -> str:
    principal = s.principal or "User:<the profile's principal>"
    return s.tool(
        "kafka-acls.sh",
        f"--add --allow-principal {principal} --operation Read --group {s.group_id}",
    )


def _number(configs: Mapping[str, ConfigValue], key: str) -> int | None:
    entry = configs.get(key)
    return int(entry.value) if entry is not None and entry.value is not None else None


def judge_share_limits(
    queue: QueueProfile, broker: Mapping[str, ConfigValue] | Unreadable
) -> Check:
    """The queue's lock duration and delivery count against the broker's bounds and defaults.

    Args:
        queue: The queue profile.
        broker: The broker configs (``group.share.*``).
    """
    name = "share-group limits"
    if isinstance(broker, Unreadable):
        return Check(
            name, Status.WARN, f"could not read the broker's group.share.* configs: {broker.reason}"
        )
    keys = {
        "lock": "group.share.record.lock.duration.ms",
        "lock_min": "group.share.min.record.lock.duration.ms",
        "lock_max": "group.share.max.record.lock.duration.ms",
        "count": "group.share.delivery.count.limit",
        "count_min": "group.share.min.delivery.count.limit",
        "count_max": "group.share.max.delivery.count.limit",
    }
    values = {k: _number(broker, key) for k, key in keys.items()}
    missing = [keys[k] for k, v in values.items() if v is None]
    if missing:
        return Check(name, Status.WARN, f"the broker does not list {', '.join(missing)}")
    lock = queue.record_lock_duration_ms or values["lock"]
    count = queue.delivery_count_limit or values["count"]
    found = (
        f"lock {lock} ms (broker {values['lock_min']}..{values['lock_max']}), "
        f"delivery count {count} (broker {values['count_min']}..{values['count_max']}), "
        f"failure.attempts {queue.failure.attempts}"
    )
    assert lock is not None and count is not None
    if not values["lock_min"] <= lock <= values["lock_max"]:  # type: ignore[operator]
        return Check(
            name,
            Status.FAIL,
            found,
            "the broker refuses a share.record.lock.duration.ms outside its bounds: the queue "
            "cannot set its group config and does not start",
            f"record_lock_duration_ms between {values['lock_min']} and {values['lock_max']} in "
            "the profile, or widen group.share.min/max.record.lock.duration.ms (server.properties)",
        )
    if not values["count_min"] <= count <= values["count_max"]:  # type: ignore[operator]
        return Check(
            name,
            Status.FAIL,
            found,
            "the broker refuses a share.delivery.count.limit outside its bounds: the queue "
            "cannot set its group config and does not start",
            f"delivery_count_limit between {values['count_min']} and {values['count_max']} in "
            "the profile",
        )
    if queue.failure.attempts > count:
        return Check(
            name,
            Status.FAIL if queue.failure.on_failure == "dlq" else Status.WARN,
            found,
            f"the broker archives a record after {count} deliveries, before the failure policy's "
            f"{queue.failure.attempts} attempts are spent: such a record is dropped without "
            "reaching the dead-letter topic",
            f"delivery_count_limit: {queue.failure.attempts} (at most {values['count_max']}) in "
            f"the profile, or failure.attempts: {count}",
        )
    return Check(name, Status.PASS, found)


def judge_share_configs(
    s: Subject, queue: QueueProfile, group: Mapping[str, ConfigValue] | Unreadable
) -> Check:
    """With ``apply_group_config: false`` the group's own configs must already be the profile's."""
    name = "share-group configs"
    if isinstance(group, Unreadable):
        return Check(name, Status.WARN, f"could not read the group's configs: {group.reason}")
    wrong = {
        key: (group[key].value if key in group else None, value)
        for key, value in queue.group_config().items()
        if key not in group or str(group[key].value) != value
    }
    if not wrong:
        return Check(name, Status.PASS, "the group's share.* configs are the profile's")
    found = "; ".join(f"{k}={have} (profile: {want})" for k, (have, want) in wrong.items())
    settings = ",".join(f"{k}={want}" for k, (_, want) in wrong.items())
    return Check(
        name,
        Status.WARN,
        found,
        "apply_group_config is off, so the broker goes by the group's configs, not the "
        "profile's (share.auto.offset.reset=latest skips the records already in the topic)",
        s.tool(
            "kafka-configs.sh",
            f"--entity-type groups --entity-name {queue.group_id} --alter --add-config {settings}",
        )
        + "\nor apply_group_config: true in the profile",
    )
