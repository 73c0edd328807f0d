"""A custom assignor: partitions in proportion to each member's ``weight`` metadata."""

from __future__ import annotations

from collections.abc import Sequence

from sdk.assignors import Member, Plan, TopicPartition, sorted_plan


class WeightedAssignor:
    """Deterministic weighted assignment: sorted partitions dealt by largest remaining share."""

    name = "weighted"
    native_name = None

    def assign(self, members: Sequence[Member], partitions: Sequence[TopicPartition]) -> Plan:
        ordered = sorted(members, key=lambda m: m.member_id)
        weights = {m.member_id: max(1, int(m.metadata.get("weight", "1"))) for m in ordered}
        total = sum(weights.values())
        plan: dict[str, list[TopicPartition]] = {m.member_id: [] for m in ordered}
        for tp in sorted(partitions):
            eligible = [m for m in ordered if tp.topic in m.topics] or ordered
            # the member furthest below its fair share gets the next partition
            chosen = min(
                eligible,
                key=lambda m: (len(plan[m.member_id]) / weights[m.member_id] * total, m.member_id),
            )
            plan[chosen.member_id].append(tp)
        return sorted_plan(plan, members)
