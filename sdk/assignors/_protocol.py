"""The assignor strategy: value objects and two small Protocols (franz-go's ``GroupBalancer``).

An :class:`Assignor` maps the members of a group and the partitions of their subscriptions to a
plan ``{member_id: [TopicPartition, ...]}``. Plans must be deterministic (the same inputs give
the same plan on every member, whatever order the inputs came in) and sorted (member ids and
each member's partitions in ascending order): custom assignors on dynamic groups rely on every
member computing the very same plan on its own. Assignors that keep partitions where they were
also implement :class:`SupportsSticky`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol, runtime_checkable

from sdk.errors import ConfigurationError

__all__ = [
    "Assignor",
    "Member",
    "Plan",
    "SupportsSticky",
    "TopicPartition",
    "check_plan",
    "sorted_plan",
]


class TopicPartition(NamedTuple):
    """A partition of a topic; hashable and ordered by (topic, partition)."""

    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}[{self.partition}]"


Plan = dict[str, list[TopicPartition]]
"""An assignment: member id → sorted partitions. Every member id of the input is a key."""


@dataclass(frozen=True, order=True)
class Member:
    """A group member as an assignor sees it.

    Attributes:
        member_id: The coordinator's member id (librdkafka orders members by it), or the
            declared id in static mode.
        topics: The topics the member subscribes to.
        rack: The member's rack or zone, if known (``client.rack``).
        metadata: Free-form string metadata a custom assignor may read (e.g. a weight).
        instance_id: The static member's ``group.instance.id``, if any (librdkafka orders two
            static members by it instead of by member id).
    """

    member_id: str
    topics: frozenset[str] = field(default_factory=frozenset)
    rack: str | None = field(default=None, compare=False)
    metadata: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    instance_id: str | None = field(default=None, compare=False)

    @classmethod
    def of(
        cls,
        member_id: str,
        topics: Iterable[str],
        *,
        rack: str | None = None,
        metadata: Mapping[str, str] | None = None,
        instance_id: str | None = None,
    ) -> Member:
        """Build a member from any iterable of topics.

        Args:
            member_id: The member id.
            topics: Subscribed topics.
            rack: Optional rack/zone.
            metadata: Optional string metadata.
            instance_id: Optional ``group.instance.id``.

        Returns:
            The member.
        """
        return cls(member_id, frozenset(topics), rack, dict(metadata or {}), instance_id)


@runtime_checkable
class Assignor(Protocol):
    """A partition assignment strategy.

    Attributes:
        name: The registry name (what a profile writes, e.g. ``"range"``).
        native_name: librdkafka's ``partition.assignment.strategy`` value when librdkafka
            implements exactly this strategy (then the group runs it natively), else None.
    """

    @property
    def name(self) -> str:
        """Registry name."""
        ...

    @property
    def native_name(self) -> str | None:
        """The librdkafka strategy name, or None for a Python-only assignor."""
        ...

    def assign(self, members: Sequence[Member], partitions: Sequence[TopicPartition]) -> Plan:
        """Return the plan for ``members`` over ``partitions``.

        Args:
            members: The group's members, in any order.
            partitions: Every partition of every subscribed topic, in any order.

        Returns:
            ``{member_id: sorted partitions}`` with every member id present, each partition
            assigned to exactly one member subscribed to its topic; deterministic.
        """
        ...


@runtime_checkable
class SupportsSticky(Protocol):
    """Optional extra of an :class:`Assignor` that keeps partitions with their previous owner."""

    def reassign(
        self,
        members: Sequence[Member],
        partitions: Sequence[TopicPartition],
        previous: Mapping[str, Sequence[TopicPartition]],
    ) -> Plan:
        """Return a balanced plan that moves as few partitions of ``previous`` as possible.

        Args:
            members: The group's members, in any order.
            partitions: Every partition of every subscribed topic.
            previous: The last plan (members that left and partitions that vanished are
                ignored).

        Returns:
            The plan, with the same contract as :meth:`Assignor.assign`.
        """
        ...


def sorted_plan(plan: Mapping[str, Iterable[TopicPartition]], members: Iterable[Member]) -> Plan:
    """Normalize a plan: every member present, keys and partition lists sorted.

    Args:
        plan: A plan, possibly partial or unsorted.
        members: The members that must all appear.

    Returns:
        The sorted plan.
    """
    ids = {m.member_id for m in members} | set(plan)
    return {mid: sorted(TopicPartition(*tp) for tp in plan.get(mid, ())) for mid in sorted(ids)}


def check_plan(
    plan: Mapping[str, Sequence[TopicPartition]],
    members: Sequence[Member],
    partitions: Sequence[TopicPartition],
    *,
    origin: str = "assignor",
) -> Plan:
    """Validate a plan: each partition owned exactly once, by a subscribed, known member.

    Args:
        plan: The plan an assignor returned.
        members: The members it was computed for.
        partitions: The partitions it was computed for.
        origin: Who made the plan, for the error message.

    Returns:
        The plan, sorted (see :func:`sorted_plan`).

    Raises:
        ConfigurationError: Unknown member, partition owned twice or not at all, unknown
            partition, or a partition given to a member not subscribed to its topic.
    """
    by_id = {m.member_id: m for m in members}
    subscribed = set().union(*(m.topics for m in members)) if members else set()
    wanted = {TopicPartition(*tp) for tp in partitions if tp[0] in subscribed}
    owner: dict[TopicPartition, str] = {}
    for member_id, owned in plan.items():
        member = by_id.get(member_id)
        if member is None:
            raise ConfigurationError(
                f"{origin}: plan names unknown member {member_id!r}", field="assignor"
            )
        for raw in owned:
            tp = TopicPartition(*raw)
            if tp not in wanted:
                raise ConfigurationError(f"{origin}: plan assigns unknown {tp}", field="assignor")
            if tp in owner:
                raise ConfigurationError(
                    f"{origin}: {tp} assigned to both {owner[tp]!r} and {member_id!r}",
                    field="assignor",
                )
            if tp.topic not in member.topics:
                raise ConfigurationError(
                    f"{origin}: {tp} assigned to {member_id!r}, which does not subscribe to it",
                    field="assignor",
                )
            owner[tp] = member_id
    missing = sorted(wanted - set(owner))
    if missing:
        raise ConfigurationError(
            f"{origin}: plan leaves {', '.join(map(str, missing))} unassigned", field="assignor"
        )
    return sorted_plan(plan, members)
