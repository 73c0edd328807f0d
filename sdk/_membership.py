"""What the at-most-once commit needs (shared by Consumer and Processor).

Membership facts, and the batch positions to commit or to rewind to.

An at-most-once batch may be handled only if its pre-handling commit was accepted *for this
member's generation*. librdkafka clears the member id (``memberid()`` → ``None``) the moment
its session times out, before the application has served the ``lost`` event; a commit sent
then goes out without a member id and generation, and the broker accepts such a commit
whenever the group is momentarily empty (e.g. every member's session expired while the group
coordinator moved). The batch's partitions may meanwhile belong to another member that
started from the older committed offset: handling the batch would duplicate it. The
reliability pipeline measured exactly that (10,360 duplicates in one at_most_once run with a
broker bounce) before this check existed.
"""

from __future__ import annotations

from collections.abc import Iterable
from contextlib import suppress
from typing import Any

from confluent_kafka import KafkaError, TopicPartition

from sdk._client import translating
from sdk.errors import KafkaClientError

__all__ = ["REBALANCE_CODES", "member_id", "next_offsets", "rewind", "still_member"]

REBALANCE_CODES = frozenset(
    (
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.UNKNOWN_MEMBER_ID,
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.FENCED_INSTANCE_ID,
        KafkaError._ASSIGNMENT_LOST,
        KafkaError.STALE_MEMBER_EPOCH,  # KIP-848 (group_protocol=consumer)
        KafkaError.FENCED_MEMBER_EPOCH,
    )
)
"""Commit errors that mean "not the owner (any more)": the batch is not handled.

Under KIP-848 the member id survives a fenced epoch, so the member-id check cannot see it;
the broker refuses such a commit with STALE_MEMBER_EPOCH or FENCED_MEMBER_EPOCH instead."""


def member_id(client: Any) -> str | None:
    """The consumer's current group member id, or None (no group session right now).

    Clients without ``memberid()`` (test doubles) report ``"-"``: always the same member.
    """
    get = getattr(client, "memberid", None)
    if get is None:
        return "-"
    value = get()
    return str(value) if value else None


def still_member(client: Any, assigned_as: str | None) -> bool:
    """Whether ``client`` is still the member that received the current assignment."""
    return assigned_as is not None and member_id(client) == assigned_as


def next_offsets(messages: Iterable[Any]) -> list[Any]:
    """The next offset to read per partition after ``messages``, sorted, as TopicPartitions."""
    last: dict[tuple[str, int], int] = {}
    for m in messages:
        last[(m.topic(), m.partition())] = m.offset() + 1
    return [TopicPartition(t, p, o) for (t, p), o in sorted(last.items())]


def rewind(client: Any, messages: Iterable[Any]) -> None:
    """Seek each partition of ``messages`` back to the batch's first offset, so it is read again.

    A partition no longer assigned is skipped: its owner starts from the committed offset.
    """
    first: dict[tuple[str, int], int] = {}
    for m in messages:
        first.setdefault((m.topic(), m.partition()), m.offset())
    for (topic, partition), offset in sorted(first.items()):
        with suppress(KafkaClientError), translating(f"seek {topic}[{partition}]"):
            client.seek(TopicPartition(topic, partition, offset))
