"""Built-in assignors: librdkafka's ``range`` and ``roundrobin`` ported exactly, and a sticky one.

``RangeAssignor`` and ``RoundRobinAssignor`` follow librdkafka's ``rdkafka_range_assignor.c`` and
``rdkafka_roundrobin_assignor.c`` (which port Kafka's Java assignors) step by step, including
the member order (member ids compared bytewise) and round robin's handling of members that do not
subscribe to a topic, so a Python plan equals what librdkafka assigns on a real group (proven in
``tests/sdk/assignors/test_native_parity.py``). Their rack-aware variants (librdkafka >= 2.3, only
when ``client.rack`` is set and brokers have racks) are not ported.

``StickyAssignor`` (Python only) and ``CooperativeStickyAssignor`` (native
``cooperative-sticky``) share one deterministic balanced-and-sticky algorithm; its plans are
balanced like librdkafka's but not bit-identical to them.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence

from sdk.assignors._protocol import Member, Plan, TopicPartition, sorted_plan

__all__ = [
    "CooperativeStickyAssignor",
    "RangeAssignor",
    "RoundRobinAssignor",
    "StickyAssignor",
    "balanced_sticky",
    "librdkafka_order",
    "partitions_by_topic",
]


def partitions_by_topic(partitions: Sequence[TopicPartition]) -> dict[str, list[int]]:
    """Group partitions by topic, topics and partition numbers sorted.

    Args:
        partitions: Any partitions.

    Returns:
        ``{topic: [partition, ...]}``.
    """
    out: dict[str, set[int]] = {}
    for topic, partition in partitions:
        out.setdefault(topic, set()).add(partition)
    return {topic: sorted(out[topic]) for topic in sorted(out)}


def _librdkafka_cmp(a: Member, b: Member) -> int:
    # rd_kafka_group_member_cmp: two static members by group.instance.id, else by member id
    if a.instance_id is not None and b.instance_id is not None:
        x, y = a.instance_id.encode(), b.instance_id.encode()
    else:
        x, y = a.member_id.encode(), b.member_id.encode()
    return (x > y) - (x < y)


def librdkafka_order(members: Iterable[Member]) -> list[Member]:
    """Sort members the way librdkafka's assignors do (``rd_kafka_group_member_cmp``).

    Args:
        members: The members.

    Returns:
        Members by ``group.instance.id`` when both compared members are static, else by member
        id, bytewise.
    """
    return sorted(members, key=functools.cmp_to_key(_librdkafka_cmp))


def _members_of(topic: str, members: Sequence[Member]) -> list[Member]:
    return librdkafka_order(m for m in members if topic in m.topics)


class RangeAssignor:
    """Per topic, contiguous ranges; the first ``n % c`` members (by id) get one extra.

    8 partitions / 3 members → 3, 3, 2 (``[0,1,2] [3,4,5] [6,7]``).
    """

    name = "range"
    native_name = "range"

    def assign(self, members: Sequence[Member], partitions: Sequence[TopicPartition]) -> Plan:
        """Return librdkafka's range plan (see :meth:`sdk.assignors.Assignor.assign`)."""
        plan: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
        for topic, numbers in partitions_by_topic(partitions).items():
            eligible = _members_of(topic, members)
            if not eligible:
                continue
            per, extra = divmod(len(numbers), len(eligible))
            for i, member in enumerate(eligible):
                start = per * i + min(i, extra)
                length = per + (1 if i < extra else 0)
                plan[member.member_id].extend(
                    TopicPartition(topic, p) for p in numbers[start : start + length]
                )
        return sorted_plan(plan, members)


class RoundRobinAssignor:
    """All partitions (topics by name) dealt cyclically to all members (by id).

    8 partitions / 3 members → c0: p0 p3 p6, c1: p1 p4 p7, c2: p2 p5. A member that does not
    subscribe to a topic is skipped the way librdkafka skips it (the first subscribed member
    whose id is >= the next one in the cycle, else the first subscribed member).
    """

    name = "round_robin"
    native_name = "roundrobin"

    def assign(self, members: Sequence[Member], partitions: Sequence[TopicPartition]) -> Plan:
        """Return librdkafka's roundrobin plan (see :meth:`sdk.assignors.Assignor.assign`)."""
        ordered = librdkafka_order(members)
        plan: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
        nxt = 0
        for topic, numbers in partitions_by_topic(partitions).items():
            eligible = _members_of(topic, members)
            if not eligible:
                continue
            eligible_ids = {m.member_id for m in eligible}
            for partition in numbers:
                candidate = ordered[nxt]
                if candidate.member_id not in eligible_ids:
                    candidate = next(
                        (m for m in eligible if _librdkafka_cmp(m, candidate) >= 0), eligible[0]
                    )
                plan[candidate.member_id].append(TopicPartition(topic, partition))
                nxt = (nxt + 1) % len(ordered)
        return sorted_plan(plan, members)


def balanced_sticky(
    members: Sequence[Member],
    partitions: Sequence[TopicPartition],
    previous: Mapping[str, Sequence[TopicPartition]] | None = None,
) -> Plan:
    """Deterministic balanced assignment that keeps previous owners where balance allows.

    Steps: (1) every member keeps the partitions of ``previous`` that still exist and that it
    still subscribes to (a partition claimed twice stays with the lower member id); (2) free
    partitions, those with the fewest eligible members first, go to the least-loaded eligible
    member (ties: lower id); (3) while some member holds two or more partitions more than an
    eligible peer, its highest partition moves to the least-loaded such peer.

    Args:
        members: The members.
        partitions: The partitions.
        previous: The last plan, or None for a fresh assignment.

    Returns:
        The sorted plan.
    """
    by_id = {m.member_id: m for m in members}
    ids = sorted(by_id)
    exists = {TopicPartition(*tp) for tp in partitions}
    eligible: dict[TopicPartition, list[str]] = {
        tp: [mid for mid in ids if tp.topic in by_id[mid].topics] for tp in sorted(exists)
    }
    owned: dict[str, set[TopicPartition]] = {mid: set() for mid in ids}
    owner: dict[TopicPartition, str] = {}
    for mid in sorted(previous or {}):
        if mid not in by_id:
            continue
        for raw in sorted(TopicPartition(*tp) for tp in (previous or {})[mid]):
            if raw in eligible and mid in eligible[raw] and raw not in owner:
                owner[raw] = mid
                owned[mid].add(raw)
    free = sorted(
        (tp for tp in eligible if tp not in owner and eligible[tp]),
        key=lambda tp: (len(eligible[tp]), tp),
    )
    for tp in free:
        mid = min(eligible[tp], key=lambda m: (len(owned[m]), m))
        owner[tp] = mid
        owned[mid].add(tp)
    moved = True
    while moved:
        moved = False
        for src in sorted(ids, key=lambda m: (-len(owned[m]), m)):
            for tp in sorted(owned[src], reverse=True):
                peers = [m for m in eligible[tp] if len(owned[m]) <= len(owned[src]) - 2]
                if peers:
                    dst = min(peers, key=lambda m: (len(owned[m]), m))
                    owned[src].remove(tp)
                    owned[dst].add(tp)
                    moved = True
                    break
            if moved:
                break
    return sorted_plan({mid: sorted(owned[mid]) for mid in ids}, members)


class StickyAssignor:
    """Balanced, and keeps partitions with their previous owner (Python only, eager)."""

    name = "sticky"
    native_name: str | None = None

    def assign(self, members: Sequence[Member], partitions: Sequence[TopicPartition]) -> Plan:
        """Return a fresh balanced plan (see :func:`balanced_sticky`)."""
        return balanced_sticky(members, partitions)

    def reassign(
        self,
        members: Sequence[Member],
        partitions: Sequence[TopicPartition],
        previous: Mapping[str, Sequence[TopicPartition]],
    ) -> Plan:
        """Return a balanced plan moving as little of ``previous`` as possible."""
        return balanced_sticky(members, partitions, previous)


class CooperativeStickyAssignor(StickyAssignor):
    """librdkafka's ``cooperative-sticky`` on real groups; the Python algorithm is the sticky one.

    On a real group librdkafka's own implementation runs (incremental rebalancing); the Python
    plans are balanced and sticky but are not guaranteed to equal librdkafka's partition for
    partition.
    """

    name = "cooperative_sticky"
    native_name: str | None = "cooperative-sticky"
