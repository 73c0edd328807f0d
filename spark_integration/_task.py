"""One Spark task: copy one input partition's range exactly once, in chunked transactions.

The numbered sequence of a task (see docs/spark.md):

1. ``init_transactions()`` with the range's stable transactional.id: fences every older attempt
   of this range (a failed or zombie task, a killed job's tasks) and aborts what it left open;
2. *then* re-read the group's committed offset (read_committed, so librdkafka asks with
   require_stable) and skip what is already done;
3. consume with read_committed up to the planned end, which is a position, not a record:
   transaction markers and aborted records leave gaps, so the end is reached when a record at
   or past it, an end-of-partition event at or past it, or a consumer position at or past it
   is seen;
4. per chunk: begin, transform, produce, ``send_offsets_to_transaction`` for this partition,
   commit (:class:`sdk.core.session.TransactionSession` does the commit steps and the one
   recovery decision; its SDK Producer places keys by the profile's partitioner).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import Consumer as _ConsumerClient

from sdk._client import ConsumerClient, ProducerClient, polled
from sdk._deprecation import RenamedAttribute
from sdk.core.session import TransactionSession
from sdk.errors import HandlerError, KafkaClientError, from_kafka_error
from sdk.failure import HandlerRunner, dead_letter
from sdk.observability import Telemetry
from sdk.processor import OutputRecord, ProcessorStats
from sdk.producer import Producer
from sdk.records import ConsumerRecord, Output, view
from spark_integration._config import BatchJobConfig
from spark_integration._ranges import PartitionRange, fetch_committed

__all__ = ["RangeResult", "RecordTransform", "run_range"]


class RecordTransform(Protocol):
    """Transform a chunk of input records into output records.

    The records are :class:`sdk.ConsumerRecord` s, as every handler gets them (``.key`` and
    ``.value`` as bytes, ``.topic``, ``.partition``, ``.offset``, ``.headers``,
    ``.timestamp_ms``; ``.raw`` is the ``confluent_kafka.Message``).
    """

    def __call__(self, records: Iterator[ConsumerRecord], /) -> Iterable[OutputRecord]:
        """Return the records to produce for the chunk (may be empty)."""
        ...


@dataclass
class RangeResult:
    """What one task did for one input partition (returned to the driver).

    Attributes:
        topic: Input topic.
        partition: Input partition.
        planned_start: Start of the planned range.
        start: The committed offset re-read after init_transactions (skips finished work).
        end: End of the planned range.
        records_in: Input records transformed in committed transactions.
        records_out: Output records produced in committed transactions.
        transactions: Transactions committed.
        aborts: Transactions aborted (any reason).
        retries: Kafka calls retried (retriable errors).
        producer_recreations: Producers recreated (ambiguous commit, transaction timeout, ...).
        attempt: Spark's attempt number of the task (0 = first), -1 outside Spark.
        duration_s: Wall time of the task in seconds.
    """

    topic: str
    partition: int
    planned_start: int
    start: int
    end: int
    records_in: int = 0
    records_out: int = 0
    transactions: int = 0
    aborts: int = 0
    retries: int = 0
    producer_recreations: int = 0
    attempt: int = -1
    duration_s: float = 0.0

    seconds = RenamedAttribute[float]("duration_s")
    """Deprecated name of :attr:`duration_s`, removed in 0.3."""


class _Rewind(Exception):
    """Internal: the transaction was given up; restart from the committed offset."""


class _RangeTask:
    def __init__(
        self,
        rng: PartitionRange,
        config: BatchJobConfig,
        transform: RecordTransform,
        producer_factory: Callable[[dict[str, Any]], ProducerClient] | None,
        consumer_factory: Callable[[dict[str, Any]], ConsumerClient],
    ) -> None:
        self.rng = rng
        self.config = config
        self.transform = transform
        self.stats = ProcessorStats()
        p = config.processing
        self.producer = Producer(
            p.producer,
            transactional_id=rng.transactional_id,
            check_topics=False,  # as in the Processor: an unknown topic fails delivery
            client_factory=producer_factory,
        )
        self.txn = TransactionSession(
            self.producer, stats=self.stats, telemetry=Telemetry.default()
        )
        consumer_config: dict[str, Any] = dict(p.consumer.render())
        consumer_config["enable.partition.eof"] = True
        self.consumer = consumer_factory(consumer_config)
        self._consumer_factory, self._consumer_config = consumer_factory, consumer_config
        self.runner = HandlerRunner(p.consumer.failure)
        self.result = RangeResult(rng.topic, rng.partition, rng.start, rng.start, rng.end)
        self._last_commit = rng.start

    # ------------------------------------------------------------------ outer loop
    def run(self) -> RangeResult:
        started = time.monotonic()
        try:
            self.txn.start()  # 1. fence older attempts first
            first = True
            while True:
                start = self._committed()  # 2. then re-read what is done
                self._last_commit = start
                if first:
                    self.result.start = start
                    first = False
                if start >= self.rng.end:
                    break
                try:
                    self._copy(start)
                except _Rewind:
                    continue
        finally:
            self._close()
            self.result.duration_s = time.monotonic() - started
            self.result.aborts = self.stats.aborts
            self.result.retries = self.stats.retries
            self.result.producer_recreations = self.stats.producer_recreations
        return self.result

    def _committed(self) -> int:
        from confluent_kafka import TopicPartition

        tp = TopicPartition(self.rng.topic, self.rng.partition)
        # a read_committed consumer of its own (so librdkafka asks with require_stable): a
        # committed() call on the data consumer delayed its first fetch after assign() by
        # a good part of a second, once per range and per rewind
        reader = self._consumer_factory(self._consumer_config)
        try:
            got = fetch_committed(
                reader, [tp], 60.0, f"committed {self.rng.topic}[{self.rng.partition}]"
            )
        finally:
            with contextlib.suppress(Exception):
                reader.close()
        offset = got[0].offset if got and got[0].offset >= 0 else -1
        return max(offset, self.rng.start)

    # ------------------------------------------------------------------ one pass
    def _copy(self, start: int) -> None:
        from confluent_kafka import TopicPartition

        self.consumer.assign([TopicPartition(self.rng.topic, self.rng.partition, start)])
        position = start
        done = False
        while not done:
            chunk, done, next_position = self._read_chunk(position)
            try:
                self._transaction(chunk, next_position)
            except KafkaClientError as exc:
                self._recover(exc)
                raise _Rewind() from exc
            position = next_position

    def _read_chunk(self, position: int) -> tuple[list[Any], bool, int]:
        """Read up to max_records_per_transaction records; return (records, at_end, next)."""
        from confluent_kafka import KafkaError, TopicPartition

        end = self.rng.end
        limit = self.config.processing.max_records_per_transaction
        batch = self.config.processing.consumer.batch_size
        poll_s = self.config.poll_timeout_ms / 1000.0
        records: list[Any] = []
        while len(records) < limit:
            msgs = polled(self.consumer.consume(min(batch, limit - len(records)), poll_s))
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        if msg.offset() >= end:
                            return records, True, end
                        continue
                    if err.fatal():
                        raise from_kafka_error(err, context="consume")
                    continue  # librdkafka reports and retries transient fetch errors itself
                if msg.offset() >= end:
                    return records, True, end
                records.append(msg)
                position = msg.offset() + 1
            if position >= end:
                return records, True, end
            if not msgs:
                tp = TopicPartition(self.rng.topic, self.rng.partition)
                pos = self.consumer.position([tp])[0].offset
                if pos >= end:
                    return records, True, end
        return records, False, position

    def _transaction(self, chunk: list[Any], commit_at: int) -> None:
        """Begin, transform and produce the chunk, commit with the input offset ``commit_at``."""
        if not chunk and commit_at <= self._last_commit:
            return
        self.txn.begin()
        # the Processor's hot path: no poll and no delivery report per output (a failed
        # record makes the transaction abortable, so the commit fails and the task rewinds)
        emit = self.txn.emitter()
        size = self.config.processing.consumer.batch_size
        pending_in = 0
        pending_out = 0
        for i in range(0, len(chunk), size):
            sub = chunk[i : i + size]
            outputs = self._run_transform(sub)
            for out in outputs:  # a refusal is translated as abortable by the seam
                emit(out)
            self.txn.serve()  # delivery reports and client events, once per transform call
            pending_in += len(sub)
            pending_out += len(outputs)
            age_ms = (time.monotonic() - self.txn.opened_at) * 1000
            if age_ms >= self.config.transaction_ms and i + size < len(chunk):
                self._commit(sub[-1].offset() + 1, pending_in, pending_out)
                pending_in = pending_out = 0
                self.txn.begin()
                emit = self.txn.emitter()
        self._commit(commit_at, pending_in, pending_out)

    def _run_transform(self, sub: list[Any]) -> list[Output]:
        records = [view(ConsumerRecord, m) for m in sub]  # the record type of every handler
        try:
            return self.runner.run(lambda recs: self.transform(iter(recs)), records)
        except HandlerError as exc:
            failure = self.config.processing.consumer.failure
            if failure.on_failure == "dlq" and failure.dlq_topic:
                return [
                    dead_letter(m, failure.dlq_topic, exc, attempts=exc.attempts, stage="handler")
                    for m in sub
                ]
            self._abort_quietly()
            raise

    def _commit(self, offset: int, records_in: int, records_out: int) -> None:
        from confluent_kafka import TopicPartition

        tp = TopicPartition(self.rng.topic, self.rng.partition, offset)
        self.txn.commit([tp], self.consumer.consumer_group_metadata())
        self._last_commit = offset
        self.result.transactions += 1
        self.result.records_in += records_in
        self.result.records_out += records_out

    # ------------------------------------------------------------------ recovery
    def _recover(self, exc: KafkaClientError) -> None:
        """Route a failed transactional call to its path (docs/processor.md); raise if none.

        Raises:
            ProducerFencedError: A newer attempt of this range owns the transactional.id.
            KafkaClientError: ``max_recoveries`` recoveries in a row without a commit.
        """
        if self.txn.failures_in_a_row >= self.config.max_recoveries:
            self._abort_quietly()
            raise exc
        self.txn.recover(exc, on_fenced="raise")  # fenced: a newer attempt owns this range

    def _abort_quietly(self) -> None:
        if self.txn.open:
            with contextlib.suppress(KafkaClientError):
                self.txn.abort()
                self.stats.aborts += 1

    def _close(self) -> None:
        with contextlib.suppress(Exception):
            self.consumer.close()
        self.txn.close()
        self.producer.close()  # no client left: only marks it closed


def run_range(
    rng: PartitionRange,
    config: BatchJobConfig,
    transform: RecordTransform,
    *,
    producer_factory: Callable[[dict[str, Any]], ProducerClient] | None = None,
    consumer_factory: Callable[[dict[str, Any]], ConsumerClient] = _ConsumerClient,
) -> RangeResult:
    """Copy one planned range exactly once (runs inside a Spark task, or anywhere).

    Args:
        rng: The planned range.
        config: The job configuration.
        transform: ``iterator of ConsumerRecord -> iterable of OutputRecord``, called per
            ``consumer.batch_size`` records.
        producer_factory: Makes the producer client from a librdkafka dict (tests).
        consumer_factory: Makes the consumer from a librdkafka dict (tests).

    Returns:
        What the task did.

    Raises:
        ProducerFencedError: A newer attempt of the same range fenced this one.
        HandlerError: The transform failed every attempt (``on_failure="stop"``); the open
            transaction was aborted.
        KafkaClientError: An unrecoverable Kafka error, or too many recoveries in a row.
    """
    return _RangeTask(rng, config, transform, producer_factory, consumer_factory).run()
