"""The fake consumer client: a group member that serves a fixed list of messages."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from sdk.testing.fakes._messages import FakeGroupMetadata, Key, PartitionLike
from sdk.testing.fakes._scripted import Scripted

__all__ = ["FakeConsumerClient"]


class FakeConsumerClient(Scripted):
    """A group member that serves a fixed list of messages.

    ``consume(n)`` returns the next ``n`` messages in list order, each partition from its
    position (every partition is served whatever the assignment). ``seek()``, ``assign()`` and
    ``incremental_assign()`` move a partition's position: to the first message at or after the
    offset (``OFFSET_BEGINNING``: the first; ``OFFSET_END``: past the last; any other negative
    offset: the committed one, else the first). Error events (:meth:`FakeMessage.partition_eof`)
    are served like messages. With ``batches`` instead, ``consume()`` returns the next batch
    whatever was asked and ``seek()`` only records.

    ``commit()`` commits the offsets given, or those stored since the last commit (none:
    ``_NO_OFFSET``), into ``group_offsets``, which ``committed()`` reads. ``memberid()`` returns
    ``member``, which a test may change at any time. ``subscribe()`` keeps the rebalance
    callbacks in ``callbacks``; :meth:`fire` calls one as librdkafka would. After ``close()``
    every call raises ``RuntimeError``, as confluent-kafka's does.

    Args:
        messages: What ``consume()`` serves.
        batches: Serve these batches in order instead (``messages`` is ignored).
        assignment: The assignment before any rebalance or ``assign()``.
        group_offsets: The group's committed offsets ``{(topic, partition): offset}`` (shared
            with a :class:`FakeProducerClient` to see its transactions' offsets).
        member: The group member id (None: no group session).
        members_after_commit: ``member`` after each successful commit (popped in place), e.g.
            ``[None]``: the group session times out while the first commit is in flight.
        assign_on_subscribe: ``subscribe()`` fires ``on_assign`` with these at once.
        partition_errors: ``{(topic, partition): [KafkaError or code, ...]}``: the next commits
            of that partition fail in the result (per-partition error), once each.
        failures: ``{call name: [KafkaError or code, ...]}``, each raised once (see
            :mod:`sdk.testing.fakes`).
        hooks: ``{call name: fn(client, *args, **kwargs)}`` run before the call.
        partitions: Partition count per topic, for ``list_topics()``.
        config: The librdkafka dict the factory was called with (kept as ``config``).
        topic_in_logs: False: ``seeks``, ``commits`` and ``stored`` hold ``(partition,
            offset)`` pairs instead of ``(topic, partition, offset)``, for a test of one topic.

    Attributes:
        seeks: Every successful ``seek()``, as a tuple (see ``topic_in_logs``).
        commits: The offsets of every successful ``commit()``, one list per call.
        stored: Every offset stored by ``store_offsets()``.
        callbacks: ``{"on_assign": fn, "on_revoke": fn, "on_lost": fn}`` from ``subscribe()``.
        subscription: The topics of the last ``subscribe()``.
        closed: ``close()`` was called.
    """

    def __init__(
        self,
        messages: Iterable[Any] = (),
        *,
        batches: list[list[Any]] | None = None,
        assignment: Iterable[PartitionLike] = (),
        group_offsets: dict[Key, int] | None = None,
        member: str | None = "member-1",
        members_after_commit: list[str | None] | None = None,
        assign_on_subscribe: Sequence[PartitionLike] | None = None,
        partition_errors: Mapping[Key, list[Any]] | None = None,
        failures: Mapping[str, list[Any]] | None = None,
        hooks: Mapping[str, Callable[..., object]] | None = None,
        partitions: Mapping[str, int] | None = None,
        config: Mapping[str, Any] | None = None,
        topic_in_logs: bool = True,
    ) -> None:
        super().__init__(failures, hooks, partitions)
        self.config = dict(config or {})
        self.messages = list(messages)
        self.batches = batches
        self.group_offsets: dict[Key, int] = group_offsets if group_offsets is not None else {}
        self.member = member
        self.members_after_commit: list[str | None] = (
            members_after_commit if members_after_commit is not None else []
        )
        self.assign_on_subscribe = (
            None if assign_on_subscribe is None else [_tp(p) for p in assign_on_subscribe]
        )
        self.partition_errors: Mapping[Key, list[Any]] = partition_errors or {}
        self.topic_in_logs = topic_in_logs
        self.seeks: list[tuple[Any, ...]] = []
        self.commits: list[list[tuple[Any, ...]]] = []
        self.stored: list[tuple[Any, ...]] = []
        self.callbacks: dict[str, Any] = {}
        self.subscription: list[str] = []
        self.closed = False
        self._assignment: dict[Key, None] = {_key(p): None for p in assignment}
        self._stored: dict[Key, int] = {}
        self._index: dict[Key, int] = {}  # next message (index in the partition) to serve
        self._position: dict[Key, int] = {}
        self._by_partition: dict[Key, list[Any]] = {}
        for m in self.messages:
            self._by_partition.setdefault((m.topic(), m.partition()), []).append(m)

    # ------------------------------------------------------------------ helpers
    def _call(self, name: str, *args: Any, **kwargs: Any) -> None:
        if self.closed:
            self.calls.append(name)
            raise RuntimeError("Consumer closed")
        super()._call(name, *args, **kwargs)

    def _log(self, topic: str, partition: int, offset: int) -> tuple[Any, ...]:
        return (topic, partition, offset) if self.topic_in_logs else (partition, offset)

    def _move(self, key: Key, offset: int) -> None:
        served = self._by_partition.get(key, [])
        if offset == OFFSET_BEGINNING:
            index = 0
        elif offset == OFFSET_END:
            index = len(served)
        elif offset < 0:
            committed = self.group_offsets.get(key, OFFSET_INVALID)
            self._move(key, committed if committed >= 0 else OFFSET_BEGINNING)
            return
        else:
            index = next((i for i, m in enumerate(served) if m.offset() >= offset), len(served))
        self._index[key] = index
        if index < len(served):
            self._position[key] = served[index].offset()
        elif offset >= 0:
            self._position[key] = offset

    def fire(
        self,
        event: Literal["on_assign", "on_revoke", "on_lost"],
        partitions: Sequence[PartitionLike],
    ) -> None:
        """Run a rebalance callback from ``subscribe()`` as librdkafka would.

        The assignment changes first (``on_assign`` adds ``partitions``, the others remove
        them), then the callback gets ``(self, partitions)``.
        """
        tps = [_tp(p) for p in partitions]
        for tp in tps:
            if event == "on_assign":
                self._assignment[(tp.topic, tp.partition)] = None
            else:
                self._assignment.pop((tp.topic, tp.partition), None)
        callback = self.callbacks.get(event)
        if callback is not None:
            callback(self, tps)

    # ------------------------------------------------------------------ ConsumerClient
    def subscribe(
        self,
        topics: list[str],
        on_assign: Any = None,
        on_revoke: Any = None,
        on_lost: Any = None,
    ) -> None:
        """Keep the topics and the callbacks (``assign_on_subscribe``: fire ``on_assign``)."""
        self._call("subscribe", topics)
        self.subscription = list(topics)
        self.callbacks = {"on_assign": on_assign, "on_revoke": on_revoke, "on_lost": on_lost}
        if self.assign_on_subscribe is not None:
            self.fire("on_assign", self.assign_on_subscribe)

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        """The next ``num_messages`` messages (or the next batch); never waits."""
        self._call("consume", num_messages, timeout)
        if self.batches is not None:
            return self.batches.pop(0) if self.batches else []
        out: list[Any] = []
        seen: dict[Key, int] = {}
        for m in self.messages:
            if len(out) >= num_messages:
                break
            key = (m.topic(), m.partition())
            index = seen.get(key, 0)
            seen[key] = index + 1
            if index < self._index.get(key, 0):
                continue
            out.append(m)
            self._index[key] = index + 1
            error = m.error()
            self._position[key] = m.offset() if error is not None else m.offset() + 1
        return out

    def commit(
        self,
        message: Any = None,
        offsets: list[TopicPartition] | None = None,
        asynchronous: bool = True,
    ) -> Any:
        """Commit ``offsets``, ``message``'s next offset, or the stored offsets.

        Returns:
            One ``TopicPartition`` per partition (``.error`` set by ``partition_errors``);
            None if ``asynchronous``.

        Raises:
            KafkaException: Scripted, or ``_NO_OFFSET``: nothing given and nothing stored.
        """
        self._call("commit", message=message, offsets=offsets, asynchronous=asynchronous)
        if offsets is not None:
            wanted = [(tp.topic, tp.partition, tp.offset) for tp in offsets]
        elif message is not None:
            wanted = [(message.topic(), message.partition(), message.offset() + 1)]
        else:
            wanted = [(t, p, o) for (t, p), o in self._stored.items()]
        if not wanted:
            raise KafkaException(KafkaError(KafkaError._NO_OFFSET))
        results: list[TopicPartition] = []
        for topic, partition, offset in wanted:
            queue = self.partition_errors.get((topic, partition))
            error = queue.pop(0) if queue else None
            if error is None:
                self.group_offsets[(topic, partition)] = offset
                self._stored.pop((topic, partition), None)
                results.append(TopicPartition(topic, partition, offset))
            else:
                code = error if isinstance(error, KafkaError) else KafkaError(error)
                results.append(_FailedPartition(topic, partition, offset, code))
        self.commits.append([self._log(t, p, o) for t, p, o in wanted])
        if self.members_after_commit:
            self.member = self.members_after_commit.pop(0)
        return None if asynchronous else results

    def store_offsets(
        self, message: Any = None, offsets: list[TopicPartition] | None = None
    ) -> None:
        """Store offsets for the next ``commit()`` without offsets."""
        self._call("store_offsets", message=message, offsets=offsets)
        if offsets is not None:
            wanted = [(tp.topic, tp.partition, tp.offset) for tp in offsets]
        else:
            wanted = [(message.topic(), message.partition(), message.offset() + 1)]
        for topic, partition, offset in wanted:
            self._stored[(topic, partition)] = offset
            self.stored.append(self._log(topic, partition, offset))

    def committed(
        self, partitions: list[TopicPartition], timeout: float = -1
    ) -> list[TopicPartition]:
        """The committed offsets from ``group_offsets`` (``OFFSET_INVALID`` where none)."""
        self._call("committed", partitions, timeout)
        return [
            TopicPartition(
                tp.topic,
                tp.partition,
                self.group_offsets.get((tp.topic, tp.partition), OFFSET_INVALID),
            )
            for tp in partitions
        ]

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """The next offset to serve per partition (``OFFSET_INVALID`` before any)."""
        self._call("position", partitions)
        return [
            TopicPartition(
                tp.topic, tp.partition, self._position.get((tp.topic, tp.partition), OFFSET_INVALID)
            )
            for tp in partitions
        ]

    def seek(self, partition: TopicPartition) -> None:
        """Record the seek and move the partition's position (not with ``batches``)."""
        self._call("seek", partition)
        self.seeks.append(self._log(partition.topic, partition.partition, partition.offset))
        if self.batches is None:
            self._move((partition.topic, partition.partition), partition.offset)

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Replace the assignment; each partition starts at its offset (see the class doc)."""
        self._call("assign", partitions)
        self._assignment = {}
        self._add(partitions)

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        """Add to the assignment; each partition starts at its offset."""
        self._call("incremental_assign", partitions)
        self._add(partitions)

    def _add(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            key = (tp.topic, tp.partition)
            self._assignment[key] = None
            self._move(key, tp.offset)

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        """Remove from the assignment."""
        self._call("incremental_unassign", partitions)
        for tp in partitions:
            self._assignment.pop((tp.topic, tp.partition), None)

    def assignment(self) -> list[TopicPartition]:
        """The current assignment (offsets unset, as confluent-kafka returns it)."""
        self._call("assignment")
        return [TopicPartition(t, p) for t, p in self._assignment]

    def pause(self, partitions: list[TopicPartition]) -> None:
        """Recorded only: the fake's fetches do not stop."""
        self._call("pause", [(tp.topic, tp.partition) for tp in partitions])

    def resume(self, partitions: list[TopicPartition]) -> None:
        """Recorded only."""
        self._call("resume", [(tp.topic, tp.partition) for tp in partitions])

    def consumer_group_metadata(self) -> Any:
        """A :class:`FakeGroupMetadata` of ``group.id`` and the current member id."""
        self._call("consumer_group_metadata")
        group = self.config.get("group.id")
        return FakeGroupMetadata(None if group is None else str(group), self.member)

    def memberid(self) -> str | None:
        """``member``."""
        self._call("memberid")
        return self.member

    def close(self) -> None:
        """Close; every later call raises ``RuntimeError`` (a second close too)."""
        self._call("close")
        self.closed = True


class _FailedPartition(TopicPartition):
    """A commit result with a per-partition error (``TopicPartition.error`` is read-only)."""

    def __init__(self, topic: str, partition: int, offset: int, error: KafkaError) -> None:
        super().__init__(topic, partition, offset)
        self._error: KafkaError | None = error

    @property
    def error(self) -> KafkaError | None:
        return self._error

    @error.setter
    def error(self, value: KafkaError | None) -> None:
        self._error = value


def _tp(p: PartitionLike) -> TopicPartition:
    return p if isinstance(p, TopicPartition) else TopicPartition(p[0], p[1])


def _key(p: PartitionLike) -> Key:
    return (p.topic, p.partition) if isinstance(p, TopicPartition) else (p[0], p[1])
