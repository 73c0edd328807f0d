"""The fake producer client and the factory that makes one per call."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaError, TopicPartition

from sdk.testing.fakes._messages import DEFAULT_TIMESTAMP_MS, FakeMessage, Key
from sdk.testing.fakes._scripted import Scripted

__all__ = ["FakeProducerClient", "FakeProducerFactory"]


class FakeProducerClient(Scripted):
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
        failures: ``{call name: [KafkaError or code, ...]}``, each raised once (see
            :mod:`sdk.testing.fakes`).
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

    def __len__(self) -> int:
        """Records whose delivery report is still to be served (as librdkafka's ``len()``)."""
        return len(self._reports)

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
