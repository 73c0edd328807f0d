"""In-memory fakes of confluent-kafka's clients, for unit tests without a broker.

Like httpx's ``MockTransport``, they replace the one layer below the SDK and nothing above it:
every front end takes factories for its clients (``Processor(producer_factory=,
consumer_factory=)``, ``Consumer(client_factory=)``, ``run_range``, ``write_slice``), so a test
passes factories that return these fakes and the SDK's own code (the session, the recovery
decision, the error seam, the commit ordering) runs unchanged. They implement
:class:`sdk._client.ProducerClient` and :class:`sdk._client.ConsumerClient`.

Example (an ambiguous commit recreates the producer and rewinds the input)::

    from confluent_kafka import KafkaError
    from sdk.testing.fakes import FakeConsumerClient, FakeMessage, FakeProducerFactory

    consumer = FakeConsumerClient(
        [FakeMessage("in", 0, i, str(i).encode()) for i in range(10)],
        assignment=[("in", 0)],
        group_offsets={("in", 0): 0},
    )
    producers = FakeProducerFactory(
        failures={"commit_transaction": [KafkaError(KafkaError._TIMED_OUT, "timed out")]}
    )
    processor = Processor(
        profile, ["in"], handler, instance_id="i1",
        producer_factory=producers, consumer_factory=lambda config: consumer,
    )
    ...
    assert len(producers.instances) == 2  # a new client: init_transactions bumps the epoch
    assert consumer.seeks == [("in", 0, 0)]  # the input was rewound to the committed offset

Both clients are scripted the same way:

* ``failures``: ``{call name: [KafkaError or error code, ...]}``. Each error is raised once, as
  ``KafkaException``, by the next call of that name. The lists are popped in place, so one dict
  given to several clients (e.g. every client a factory makes) fails the first calls overall.
* ``hooks``: ``{call name: fn(client, *args, **kwargs)}`` runs before the call (and before its
  scripted failure): block in it for a call that never returns (librdkafka #5456), raise for
  any other exception, or just record something.
* ``calls``: the name of every call, in order.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    TIMESTAMP_CREATE_TIME,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)
from confluent_kafka.admin._metadata import ClusterMetadata, PartitionMetadata, TopicMetadata

if TYPE_CHECKING:
    from sdk._client import ConsumerClient, ProducerClient

__all__ = [
    "FakeConsumerClient",
    "FakeGroupMetadata",
    "FakeMessage",
    "FakeProducerClient",
    "FakeProducerFactory",
]

Key = tuple[str, int]
"""``(topic, partition)``."""

PartitionLike = TopicPartition | tuple[str, int]
"""A partition as a test writes it: a ``TopicPartition`` or a ``(topic, partition)`` pair."""

DEFAULT_TIMESTAMP_MS = 1_700_000_000_000
"""Create time of a :class:`FakeMessage` that was given none."""


class FakeMessage(Message):
    """A record as a consumer returns it: a real ``confluent_kafka.Message``, easier to build.

    ``topic()``, ``partition()``, ``offset()``, ``key()``, ``value()``, ``headers()``,
    ``timestamp()`` and ``error()`` behave as confluent-kafka's, because they are its.

    Args:
        topic: Topic.
        partition: Partition.
        offset: Offset in the partition.
        value: Value (None: a tombstone).
        key: Key.
        headers: ``[(name, value), ...]``.
        timestamp: Create time in ms (``timestamp()`` returns ``(TIMESTAMP_CREATE_TIME, it)``).
        error: A ``KafkaError`` makes this an error event (see :meth:`partition_eof`).
    """

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        value: bytes | None = None,
        *,
        key: bytes | None = None,
        headers: list[tuple[str, bytes | None]] | None = None,
        timestamp: int = DEFAULT_TIMESTAMP_MS,
        error: KafkaError | None = None,
    ) -> None:
        super().__init__(
            topic=topic,
            partition=partition,
            offset=offset,
            key=key,
            value=value,
            headers=headers,  # type: ignore[arg-type]  # the stubs' HeadersType is invariant
            error=error,
            timestamp=(TIMESTAMP_CREATE_TIME, timestamp),
        )

    @classmethod
    def partition_eof(cls, topic: str, partition: int, offset: int) -> FakeMessage:
        """The event ``enable.partition.eof`` makes at the end of a partition (at ``offset``)."""
        return cls(topic, partition, offset, error=KafkaError(KafkaError._PARTITION_EOF))

    def __repr__(self) -> str:
        error = self.error()
        what = f"error={error.name()}" if error is not None else f"value={self.value()!r}"
        return f"FakeMessage({self.topic()}[{self.partition()}]@{self.offset()}, {what})"


@dataclass(frozen=True)
class FakeGroupMetadata:
    """What :meth:`FakeConsumerClient.consumer_group_metadata` returns."""

    group_id: str | None
    member_id: str | None


class _Scripted:
    """Call log, hooks and scripted failures, shared by both fake clients."""

    def __init__(
        self,
        failures: Mapping[str, list[Any]] | None,
        hooks: Mapping[str, Callable[..., object]] | None,
        partitions: Mapping[str, int] | None,
    ) -> None:
        self.failures: Mapping[str, list[Any]] = failures if failures is not None else {}
        """Scripted failures (see the module docstring); popped in place."""
        self.hooks: dict[str, Callable[..., object]] = dict(hooks or {})
        """``{call name: fn(client, *args, **kwargs)}``, run before the call."""
        self.partitions: dict[str, int] = dict(partitions or {})
        """Partition count per topic, for ``list_topics()``."""
        self.calls: list[str] = []
        """The name of every call, in order."""

    def _call(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.calls.append(name)
        hook = self.hooks.get(name)
        if hook is not None:
            hook(self, *args, **kwargs)
        queue = self.failures.get(name)
        if queue:
            error = queue.pop(0)
            raise KafkaException(error if isinstance(error, KafkaError) else KafkaError(error))

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> Any:
        """A ``ClusterMetadata`` of the topics in ``partitions`` (an unknown one has an error)."""
        self._call("list_topics", topic, timeout)
        cluster = ClusterMetadata()
        names = list(self.partitions) if topic is None else [topic]
        for name in names:
            meta = TopicMetadata()
            meta.topic = name
            count = self.partitions.get(name)
            if count is None:
                meta.error = KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART)
            else:
                for p in range(count):
                    part = PartitionMetadata()
                    part.id = p
                    meta.partitions[p] = part
            cluster.topics[name] = meta
        return cluster


class FakeProducerClient(_Scripted):
    """A transactional (or plain) producer that keeps what it was given.

    ``produce()`` queues a delivery report that the next ``poll()``/``flush()`` serves
    (successful, unless ``delivery_errors`` scripts a failure). Records produced in the open
    transaction are ``pending``; ``commit_transaction()`` moves them to ``committed`` and applies
    the offsets of ``send_offsets_to_transaction()`` to ``group_offsets``; ``abort_transaction()``
    and ``purge()`` drop them. A producer that never begins a transaction commits nothing: its
    records stay ``pending``. ``purge()`` serves no delivery report for the dropped records
    (librdkafka reports them as ``_PURGE_QUEUE`` failures).

    Args:
        config: The librdkafka dict the factory was called with (kept as ``config``).
        failures: ``{call name: [KafkaError or code, ...]}``, each raised once (module docstring).
        hooks: ``{call name: fn(client, *args, **kwargs)}`` run before the call.
        group_offsets: The consumer group's committed offsets ``{(topic, partition): offset}``.
            Give the same dict to a :class:`FakeConsumerClient` and a committed transaction
            moves what its ``committed()`` returns.
        partitions: Partition count per topic, for ``list_topics()``.
        delivery_errors: Errors for the next delivery reports, one per record (popped in place).

    Attributes:
        pending: Values of the records of the open transaction (see above).
        committed: Values of the records of committed transactions.
        produced: Every record produced, as :class:`FakeMessage`, in order.
        group_metadata: What the last ``send_offsets_to_transaction()`` was given.
        in_transaction: A transaction is open.
    """

    def __init__(
        self,
        config: Mapping[str, Any] | None = None,
        *,
        failures: Mapping[str, list[Any]] | None = None,
        hooks: Mapping[str, Callable[..., object]] | None = None,
        group_offsets: dict[Key, int] | None = None,
        partitions: Mapping[str, int] | None = None,
        delivery_errors: list[KafkaError] | None = None,
    ) -> None:
        super().__init__(failures, hooks, partitions)
        self.config = dict(config or {})
        self.group_offsets: dict[Key, int] = group_offsets if group_offsets is not None else {}
        self.delivery_errors: list[KafkaError] = (
            delivery_errors if delivery_errors is not None else []
        )
        self.produced: list[FakeMessage] = []
        self.pending_records: list[FakeMessage] = []
        self.committed_records: list[FakeMessage] = []
        self.group_metadata: Any = None
        self.in_transaction = False
        self._offsets: dict[Key, int] = {}  # sent in the open transaction
        self._reports: list[tuple[Callable[[Any, Any], object], FakeMessage]] = []
        self._next: dict[Key, int] = {}

    @property
    def pending(self) -> list[Any]:
        """Values of the records not (yet) committed."""
        return [m.value() for m in self.pending_records]

    @property
    def committed(self) -> list[Any]:
        """Values of the records of committed transactions."""
        return [m.value() for m in self.committed_records]

    def produce(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int = -1,
        *,
        on_delivery: Any = None,
        timestamp: int = 0,
        headers: Any = None,
        callback: Any = None,
    ) -> None:
        """Queue the record (partition -1, librdkafka's choice, is partition 0 here)."""
        self._call("produce", topic, value, key, partition)
        p = max(partition, 0)
        offset = self._next.get((topic, p), 0)
        self._next[(topic, p)] = offset + 1
        message = FakeMessage(
            topic,
            p,
            offset,
            value.encode() if isinstance(value, str) else value,
            key=key.encode() if isinstance(key, str) else key,
            headers=list(headers.items()) if isinstance(headers, dict) else headers,
            timestamp=timestamp or DEFAULT_TIMESTAMP_MS,
        )
        self.produced.append(message)
        self.pending_records.append(message)
        report = on_delivery or callback
        if report is not None:
            self._reports.append((report, message))

    def _serve(self) -> int:
        reports, self._reports = self._reports, []
        for report, message in reports:
            error = self.delivery_errors.pop(0) if self.delivery_errors else None
            if error is not None:  # a failed record is not in the log
                self.pending_records = [m for m in self.pending_records if m is not message]
            report(error, message)
        return len(reports)

    def poll(self, timeout: float = -1) -> int:
        """Serve the queued delivery reports."""
        self._call("poll", timeout)
        return self._serve()

    def flush(self, timeout: float = -1) -> int:
        """Serve the queued delivery reports; nothing is ever left queued (returns 0)."""
        self._call("flush", timeout)
        self._serve()
        return 0

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        """Drop the records not committed, and their delivery reports."""
        self._call("purge", in_queue, in_flight, blocking)
        self.pending_records.clear()
        self._reports.clear()

    def init_transactions(self, timeout: float = -1) -> None:
        """Initialize (a transaction left open is aborted, as by a new epoch)."""
        self._call("init_transactions", timeout)
        self._drop_transaction()

    def begin_transaction(self) -> None:
        """Open a transaction."""
        self._call("begin_transaction")
        self.in_transaction = True

    def send_offsets_to_transaction(
        self, positions: list[TopicPartition], group_metadata: Any, timeout: float = -1
    ) -> None:
        """Keep the positions; ``commit_transaction()`` applies them to ``group_offsets``."""
        self._call("send_offsets_to_transaction", positions, group_metadata, timeout)
        self.group_metadata = group_metadata
        for tp in positions:
            self._offsets[(tp.topic, tp.partition)] = tp.offset

    def commit_transaction(self, timeout: float = -1) -> None:
        """Serve the delivery reports, then commit the records and the offsets."""
        self._call("commit_transaction", timeout)
        self._serve()  # librdkafka flushes before it commits
        self.committed_records += self.pending_records
        self.pending_records = []
        self.group_offsets.update(self._offsets)
        self._offsets = {}
        self.in_transaction = False

    def abort_transaction(self, timeout: float = -1) -> None:
        """Drop the records and offsets of the open transaction."""
        self._call("abort_transaction", timeout)
        self._drop_transaction()

    def _drop_transaction(self) -> None:
        self.pending_records = []
        self._reports = []
        self._offsets = {}
        self.in_transaction = False


class FakeProducerFactory:
    """A ``producer_factory`` that makes a :class:`FakeProducerClient` per call and keeps them.

    A session recreates its client after an ambiguous commit or a fence; ``instances`` shows
    each one. Options are :class:`FakeProducerClient`'s; those given to a call override those
    given here. Dicts and lists are passed as they are, so ``failures`` and ``group_offsets``
    are shared by every client made.

    Attributes:
        instances: Every client made, in order.
    """

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.instances: list[FakeProducerClient] = []

    def __call__(self, config: dict[str, Any], **options: Any) -> FakeProducerClient:
        """Make a client for ``config``."""
        client = FakeProducerClient(config, **{**self.options, **options})
        self.instances.append(client)
        return client


class FakeConsumerClient(_Scripted):
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
        failures: ``{call name: [KafkaError or code, ...]}``, each raised once (module docstring).
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


if TYPE_CHECKING:  # mypy checks here that the fakes implement the SDK's client protocols
    _IMPLEMENTS: tuple[type[ProducerClient], type[ConsumerClient]] = (
        FakeProducerClient,
        FakeConsumerClient,
    )
