"""Two custom assignors users ask for: lag-aware and rack/zone-aware (both Python only).

Both are deterministic functions of their inputs, so every member of a group computes the same
plan *if it is given the same inputs*. For :class:`LagAwareAssignor` that means the same lag
snapshot on every member (pass one ``lags`` mapping, e.g. read once and distributed with the
deployment, or use it in static mode); lags each member measures on its own at slightly
different times would give different plans, and :class:`~sdk.assignors.GroupAssignedConsumer`
would then hand some partitions to two members — which is why it never fetches lags itself.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from sdk.assignors._protocol import Member, Plan, TopicPartition, sorted_plan

__all__ = ["LagAwareAssignor", "RackAwareAssignor"]


class LagAwareAssignor:
    """Balances total lag: partitions, largest lag first, go to the member with least lag.

    Ties (equal total lag) go to the member with fewer partitions, then the lower id, so with
    no lag known the plan is balanced by partition count.

    Args:
        lags: Lag (records behind) per partition; partitions not listed count as ``0``.
    """

    name = "lag_aware"
    native_name: str | None = None

    def __init__(self, lags: Mapping[TopicPartition, int] | None = None) -> None:
        self.lags = {TopicPartition(*tp): max(0, int(lag)) for tp, lag in (lags or {}).items()}

    def assign(self, members: Sequence[Member], partitions: Sequence[TopicPartition]) -> Plan:
        """Return the lag-balanced plan (see :meth:`sdk.assignors.Assignor.assign`)."""
        ids = sorted(m.member_id for m in members)
        topics = {m.member_id: m.topics for m in members}
        load = dict.fromkeys(ids, 0)
        plan: dict[str, list[TopicPartition]] = {mid: [] for mid in ids}
        order = sorted(
            {TopicPartition(*tp) for tp in partitions},
            key=lambda tp: (-self.lags.get(tp, 0), tp),
        )
        for tp in order:
            eligible = [mid for mid in ids if tp.topic in topics[mid]]
            if not eligible:
                continue
            mid = min(eligible, key=lambda m: (load[m], len(plan[m]), m))
            plan[mid].append(tp)
            load[mid] += self.lags.get(tp, 0)
        return sorted_plan(plan, members)


class RackAwareAssignor:
    """Prefers a member in a rack that holds a replica of the partition, within balance.

    Every member gets at most ``ceil(partitions / members)`` partitions of the topics it
    subscribes to; within that cap a partition goes to the least-loaded member whose
    :attr:`~sdk.assignors.Member.rack` is one of the partition's replica racks, else to the
    least-loaded eligible member. Without rack information it is a balanced assignment.

    Args:
        partition_racks: Racks (zones) holding a replica of each partition, e.g. built from
            ``AdminClient.describe_topics`` (each replica ``Node.rack``).
    """

    name = "rack_aware"
    native_name: str | None = None

    def __init__(self, partition_racks: Mapping[TopicPartition, Sequence[str]] | None = None):
        self.partition_racks = {
            TopicPartition(*tp): frozenset(racks) for tp, racks in (partition_racks or {}).items()
        }

    def assign(self, members: Sequence[Member], partitions: Sequence[TopicPartition]) -> Plan:
        """Return the rack-preferring balanced plan (see :meth:`sdk.assignors.Assignor.assign`)."""
        ids = sorted(m.member_id for m in members)
        by_id = {m.member_id: m for m in members}
        wanted = sorted(
            tp
            for tp in {TopicPartition(*tp) for tp in partitions}
            if any(tp.topic in m.topics for m in members)
        )
        if not ids or not wanted:
            return sorted_plan({}, members)
        cap = math.ceil(len(wanted) / len(ids))
        plan: dict[str, list[TopicPartition]] = {mid: [] for mid in ids}

        def local(tp: TopicPartition) -> list[str]:
            racks = self.partition_racks.get(tp, frozenset())
            return [
                mid for mid in ids if by_id[mid].rack in racks and tp.topic in by_id[mid].topics
            ]

        # Partitions with the fewest local members first, so scarce local capacity is used well.
        for tp in sorted(wanted, key=lambda tp: (len(local(tp)) or len(ids) + 1, tp)):
            eligible = [mid for mid in ids if tp.topic in by_id[mid].topics]
            under = [mid for mid in local(tp) if len(plan[mid]) < cap]
            if not under:
                under = [mid for mid in eligible if len(plan[mid]) < cap] or eligible
            mid = min(under, key=lambda m: (len(plan[m]), m))
            plan[mid].append(tp)
        return sorted_plan(plan, members)
