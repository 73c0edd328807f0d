"""The at-most-once commit: a polled batch committed before any handler sees it.

One implementation for the Consumer and the Processor (which imports it from here, the layer
below it). :func:`commit_before_handling` commits the batch; around it, the membership facts
it checks, the marks that keep a record from being handed out twice, and the batch positions
to commit or to rewind to.

An at-most-once batch may be handled only if its pre-handling commit was accepted *for this
member's generation*. librdkafka clears the member id (``memberid()`` → ``None``) the moment
its session times out, before the application has served the ``lost`` event; a commit sent
then goes out without a member id and generation, and the broker accepts such a commit
whenever the group is momentarily empty (e.g. every member's session expired while the group
coordinator moved). The batch's partitions may meanwhile belong to another member that
started from the older committed offset: handling the batch would duplicate it (a broker
bounce is enough to get there).

A batch may also hold records this client already handed to a handler: after a partition was
lost and assigned back, librdkafka can deliver a batch of it twice, both times after the new
assignment. :class:`HandledMarks` remembers, per partition, the position committed before
handling; records below it are dropped, never handed out twice.

The same stale delivery can hold records *another* member handled while this one was out of
the group: fetched before the session was lost, delivered after the partition came back. Its
own marks cannot see those, and the commit is accepted (this member owns the partition now),
so the marks are also raised, once per assignment, to the group's committed offsets (one
``committed()`` call before the first batch of a newly assigned partition is committed): a
record below the committed offset was committed before handling by whoever read it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextlib import suppress
from typing import Protocol

from confluent_kafka import KafkaError, TopicPartition

from sdk._client import ConsumerClient, KafkaMessage, call_kafka, translating
from sdk.errors import KafkaClientError, from_kafka_error
from sdk.observability import Telemetry
from sdk.records import last_positions

__all__ = [
    "REBALANCE_CODES",
    "HandledMarks",
    "check_partitions",
    "commit_before_handling",
    "member_id",
    "next_offsets",
    "rewind",
    "seek_back",
    "still_member",
]

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


def member_id(client: ConsumerClient) -> str | None:
    """The consumer's current group member id, or None (no group session right now).

    Clients without ``memberid()`` (test doubles) report ``"-"``: always the same member.
    """
    get = getattr(client, "memberid", None)
    if get is None:
        return "-"
    value = get()
    return str(value) if value else None


def still_member(client: ConsumerClient, assigned_as: str | None) -> bool:
    """Whether ``client`` is still the member that received the current assignment."""
    return assigned_as is not None and member_id(client) == assigned_as


def next_offsets(messages: Iterable[KafkaMessage]) -> list[TopicPartition]:
    """The next offset to read per partition after ``messages``, sorted, as TopicPartitions."""
    last: dict[tuple[str, int], int] = {}
    last_positions(messages, last)
    return [TopicPartition(t, p, o) for (t, p), o in sorted(last.items())]


def rewind(client: ConsumerClient, messages: Iterable[KafkaMessage]) -> None:
    """Seek each partition of ``messages`` back to the batch's first offset, so it is read again.

    A partition no longer assigned is skipped: its owner starts from the committed offset.
    """
    first: dict[tuple[str, int], int] = {}
    for m in messages:
        first.setdefault((m.topic(), m.partition()), m.offset())
    for (topic, partition), offset in sorted(first.items()):
        seek_back(client, topic, partition, offset)


def seek_back(client: ConsumerClient, topic: str, partition: int, offset: int) -> None:
    """Seek a partition to ``offset`` to read it again; one no longer assigned is skipped."""
    with suppress(KafkaClientError), translating(f"seek {topic}[{partition}]"):
        client.seek(TopicPartition(topic, partition, offset))


def check_partitions(result: list[TopicPartition] | None, context: str) -> None:
    """Raise the first per-partition error of a ``commit()`` result (None: no result).

    Raises:
        KafkaClientError: A partition's commit failed (CommitError unless more specific).
    """
    for tp in result or ():
        if tp.error is not None:
            raise from_kafka_error(
                tp.error, context=f"{context} {tp.topic}[{tp.partition}]", commit=True
            )


class HandledMarks:
    """at_most_once: per partition, the position this client committed before handling.

    Every record below a partition's mark was handed to a handler (or deliberately skipped)
    by this client, so a record delivered again below it must not be handed out again. The
    marks live as long as the client: offsets of a partition only grow, so a mark never hides
    a record nobody handled (a topic deleted and re-created under a running client is the
    exception; at-most-once then loses those records, it never repeats them).

    It also knows the partitions assigned to this member: a record of any other partition is
    never handed out (the classic group coordinator accepts a member's commit for a partition
    it does not own, so the commit would not stop it).
    """

    __slots__ = ("_marks", "_owned", "_unchecked")

    def __init__(self) -> None:
        self._marks: dict[tuple[str, int], int] = {}
        self._owned: set[tuple[str, int]] = set()
        self._unchecked: set[tuple[str, int]] = set()

    def assigned(self, partitions: Iterable[TopicPartition]) -> None:
        """Partitions (TopicPartitions) were assigned: check their committed offsets first."""
        keys = {(tp.topic, tp.partition) for tp in partitions}
        self._owned |= keys
        self._unchecked |= keys

    def released(self, partitions: Iterable[TopicPartition]) -> None:
        """Partitions (TopicPartitions) were revoked or lost: none of their records is fresh."""
        self._owned -= {(tp.topic, tp.partition) for tp in partitions}

    def check(
        self,
        client: ConsumerClient,
        messages: list[KafkaMessage],
        *,
        timeout_s: float,
        on_retry: Callable[[str], None] | None = None,
    ) -> None:
        """Raise the marks of newly assigned partitions in ``messages`` to their committed offsets.

        Raises:
            KafkaClientError: ``committed()`` failed after retries (the partitions stay
                unchecked).
        """
        unchecked = self._unchecked
        if not unchecked:
            return
        keys = {(m.topic(), m.partition()) for m in messages} & unchecked
        if not keys:
            return
        asked = [TopicPartition(t, p) for t, p in sorted(keys)]
        committed = call_kafka(
            lambda: client.committed(asked, timeout_s),
            context="committed offsets of newly assigned partitions (at_most_once)",
            on_retry=on_retry,
        )
        check_partitions(committed, "committed offsets (at_most_once)")
        self.advance(tp for tp in committed if tp.offset >= 0)
        unchecked -= keys

    def fresh(self, messages: list[KafkaMessage]) -> list[KafkaMessage]:
        """The records of ``messages`` of assigned partitions, not below their mark, in order."""
        marks, owned = self._marks, self._owned
        if not marks and {(m.topic(), m.partition()) for m in messages} <= owned:
            return messages
        return [
            m
            for m in messages
            if (key := (m.topic(), m.partition())) in owned and m.offset() >= marks.get(key, -1)
        ]

    def advance(self, offsets: Iterable[TopicPartition]) -> None:
        """Raise the marks to the committed ``offsets`` (TopicPartitions)."""
        marks = self._marks
        for tp in offsets:
            key = (tp.topic, tp.partition)
            if tp.offset > marks.get(key, -1):
                marks[key] = tp.offset


class CommitCounts(Protocol):
    """The counters the at-most-once commit updates (ConsumerStats, ProcessorStats)."""

    commits: int
    commit_refused: int
    redelivered: int

    def note(self, event: str, /) -> None:
        """Record an event line."""
        ...


def commit_before_handling(
    client: ConsumerClient,
    messages: list[KafkaMessage],
    *,
    assigned_as: str | None,
    stats: CommitCounts,
    marks: HandledMarks,
    telemetry: Telemetry | None = None,
    on_retry: Callable[[str], None] | None = None,
    committed_timeout_s: float = 10.0,
) -> list[KafkaMessage]:
    """at_most_once: commit the batch synchronously before any handler sees it.

    Records already handed out (below their partition's :class:`HandledMarks` mark, which
    starts at the group's committed offset when the partition is assigned) are dropped first
    and counted as ``redelivered``. The rest may be handled only if the commit
    was accepted for the member that received the assignment (``assigned_as``): if the group
    session is gone before or after the commit (``memberid()`` changed or cleared, see the
    module docstring), or a rebalance refused the commit (for the whole request or for one
    partition), the batch is not handled — another member may own its partitions and have
    started from the older committed offset — and its partitions are rewound to the batch's
    first offsets, so their owner reads it again.

    Args:
        client: The ``confluent_kafka.Consumer``.
        messages: The polled batch.
        assigned_as: The member id that received the current assignment.
        stats: ``commits`` / ``commit_refused`` / ``redelivered`` counters and ``note()``.
        marks: The client's handled positions; advanced when the commit is accepted.
        telemetry: Counts a refused batch as ``safeguard=unowned_batch`` and dropped records
            as ``safeguard=redelivered``.
        on_retry: Called before each retry of the commit.
        committed_timeout_s: Timeout of the ``committed()`` call after an assignment (if it
            fails the batch is refused and read again, not handled unchecked).

    Returns:
        The records that may be handled, in order (empty: nothing to handle).

    Raises:
        KafkaClientError: The commit failed otherwise (CommitError unless more specific).
    """
    context = "commit before handling (at_most_once)"

    def refused(why: str) -> list[KafkaMessage]:
        stats.commit_refused += 1
        stats.note(f"{why}; batch not handled")
        if telemetry is not None:
            telemetry.safeguard("unowned_batch", f"{why}; batch not handled")
        rewind(client, batch)
        return []

    try:
        marks.check(client, messages, timeout_s=committed_timeout_s, on_retry=on_retry)
    except KafkaClientError as exc:
        batch = messages
        return refused(f"{context}: {exc}")
    batch = marks.fresh(messages)
    if len(batch) != len(messages):
        dropped = len(messages) - len(batch)
        stats.redelivered += dropped
        why = (
            f"{context}: {dropped} records delivered again below the position already "
            "committed before handling, or of a partition not assigned to this member; "
            "not handled"
        )
        stats.note(why)
        if telemetry is not None:
            telemetry.safeguard("redelivered", why)
        if not batch:
            return []
    if not still_member(client, assigned_as):
        return refused(f"{context}: group session lost; not sent")
    offsets = next_offsets(batch)
    try:
        result = call_kafka(
            lambda: client.commit(offsets=offsets, asynchronous=False),
            context=context,
            commit=True,
            on_retry=on_retry,
        )
        check_partitions(result, context)  # the Processor's copy once skipped these
    except KafkaClientError as exc:
        if exc.code not in REBALANCE_CODES:
            raise
        return refused(str(exc))
    if not still_member(client, assigned_as):
        return refused(f"{context}: group session lost meanwhile")
    marks.advance(offsets)
    stats.commits += 1
    return batch
