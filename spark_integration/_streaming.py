"""An exactly-once ``foreachBatch`` sink for Structured Streaming.

Spark replays a micro-batch (same batch id, same input) after a failure or a driver restart
from the checkpoint. The batch's rows are split into slices by their slice columns
(:func:`slice_of`); each slice is written in one Kafka transaction whose transactional.id is
stable per (sink, slice index), together with a *batch
marker*: the sink group's committed offset of partition ``slice`` of a small progress topic,
set to ``batch_id + 1`` by ``send_offsets_to_transaction``. The marker commits atomically with
the slice's output, so a replayed slice whose marker is already ``>= batch_id + 1`` is skipped.
No record is ever written to the progress topic: only its committed offsets are used (the group
coordinator requires the partition to exist, nothing more).

Per slice, in this order: ``init_transactions()`` (fences every older attempt of the slice,
including those of a killed driver, and aborts what they left open), *then* read the marker
(read_committed, so librdkafka asks with require_stable), skip or write + commit.
"""

from __future__ import annotations

import contextlib
import functools
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

from confluent_kafka import Consumer as _ConsumerClient
from pydantic import Field, model_validator

from sdk._client import ConsumerClient, ProducerClient, admin_client, admin_config, translating
from sdk._deprecation import moved
from sdk.core.session import TransactionSession
from sdk.errors import ConfigurationError, KafkaClientError
from sdk.observability import Telemetry
from sdk.processor import OutputRecord, ProcessorStats
from sdk.producer import Producer
from sdk.profiles import Guarantee, ProducerProfile, ProfileModel
from spark_integration._batch import is_connect
from spark_integration._ranges import fetch_committed
from spark_integration._slicing import FILLER, KEY, SLICE, slice_adder, slice_of, slice_writer

__all__ = [
    "ExactlyOnceStreamingSink",
    "RowTransform",
    "SliceResult",
    "StreamingSinkConfig",
    "slice_of",
    "write_slice",
]

_NAME = re.compile(r"^[A-Za-z0-9._-]+$")


class RowTransform(Protocol):
    """Transform the rows of one slice (``pyspark.sql.Row``) into output records."""

    def __call__(self, rows: Iterator[Any], /) -> Iterable[OutputRecord]:
        """Return the records to produce for the rows."""
        ...


class StreamingSinkConfig(ProfileModel):
    """Configuration of an exactly-once foreachBatch sink.

    Attributes:
        sink_name: Stable name; part of every transactional.id and of the default group.
        producer: Exactly-once producer profile with ``transactional_id_prefix``.
        progress_topic: Topic whose partition ``i`` carries slice ``i``'s batch marker (it is
            grown with ``create_partitions`` when a batch has more slices).
        progress_group: Group holding the markers (default ``<sink_name>.progress``).
        chunk_size: Rows per transform call.
        slices: Slices (Spark partitions, transactions) per batch when ``slice_columns`` is set.
        slice_columns: Columns whose values decide a row's slice (:func:`slice_of`,
            deterministic for the same rows). The default fits Spark's Kafka
            source. Empty: keep the batch DataFrame's own partitioning, which then must put the
            same rows in the same partition index on every replay (Spark's Kafka source does
            *not*: its partition order can change after a restart from the checkpoint).
    """

    sink_name: str = Field(min_length=1, max_length=100)
    producer: ProducerProfile
    progress_topic: str = Field(min_length=1)
    progress_group: str | None = None
    chunk_size: int = Field(default=500, ge=1)
    slices: int = Field(default=4, ge=1, le=10_000)
    slice_columns: tuple[str, ...] = ("topic", "partition")

    @model_validator(mode="after")
    def _consistent(self) -> StreamingSinkConfig:
        if not _NAME.match(self.sink_name):
            raise ConfigurationError(
                "sink_name: only letters, digits, '.', '_' and '-'", field="sink_name"
            )
        if self.producer.guarantee is not Guarantee.EXACTLY_ONCE:
            raise ConfigurationError(
                "producer.guarantee: the sink is exactly_once only", field="producer.guarantee"
            )
        if not self.producer.transactional_id_prefix:
            raise ConfigurationError(
                "producer.transactional_id_prefix: the sink derives one transactional.id per "
                "slice from it",
                field="producer.transactional_id_prefix",
            )
        return self

    @property
    def group(self) -> str:
        """The group whose committed offsets are the batch markers."""
        return self.progress_group or f"{self.sink_name}.progress"

    def transactional_id(self, slice_index: int) -> str:
        """The transactional.id of slice ``slice_index``: stable across batches and restarts."""
        return f"{self.producer.transactional_id_prefix}{self.sink_name}.slice-{slice_index}"


@dataclass
class SliceResult:
    """What one slice of one batch did.

    Attributes:
        batch_id: The micro-batch id.
        slice_index: The Spark partition index within the batch.
        skipped: True if the marker showed the slice already committed (a replay).
        records_out: Output records committed.
        attempt: Spark's task attempt number.
    """

    batch_id: int
    slice_index: int
    skipped: bool
    records_out: int = 0
    attempt: int = -1


def _marker_metadata(slices: int) -> str:
    return json.dumps({"slices": slices})


def write_slice(
    config: StreamingSinkConfig,
    transform: RowTransform,
    batch_id: int,
    slice_index: int,
    slices: int,
    rows: Iterator[Any],
    *,
    producer_factory: Callable[[dict[str, Any]], ProducerClient] | None = None,
    consumer_factory: Callable[[dict[str, Any]], ConsumerClient] = _ConsumerClient,
) -> SliceResult:
    """Write one slice of one batch in one transaction with its batch marker, or skip it.

    Any failure aborts (or abandons) the transaction and raises, so Spark retries the task;
    the retry recomputes the slice (deterministic input) and fences this attempt.

    Raises:
        KafkaClientError: A Kafka call failed (the transaction is not committed).
        Exception: The transform raised (the transaction is aborted).
    """
    from confluent_kafka import TopicPartition

    producer = Producer(
        config.producer,
        transactional_id=config.transactional_id(slice_index),
        check_topics=False,  # as in the Processor: an unknown topic fails delivery
        client_factory=producer_factory,
    )
    txn = TransactionSession(producer, stats=ProcessorStats(), telemetry=Telemetry.default())
    consumer = consumer_factory(
        {
            "bootstrap.servers": config.producer.bootstrap_servers,
            "group.id": config.group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            **{
                k: v
                for k, v in config.producer.render(
                    transactional_id=config.transactional_id(slice_index)
                ).items()
                if k.startswith(("security.", "sasl.", "ssl."))
            },
        }
    )
    tp = TopicPartition(config.progress_topic, slice_index)
    try:
        txn.start()  # 1. fence every older attempt of this slice
        got = fetch_committed(  # 2. then read the marker
            consumer, [tp], 60.0, f"batch marker {config.progress_topic}[{slice_index}]"
        )
        marker = got[0].offset if got else -1
        if marker >= batch_id + 1:
            return SliceResult(batch_id, slice_index, skipped=True)
        txn.begin()
        produced = 0
        chunk: list[Any] = []
        for row in rows:
            chunk.append(row)
            if len(chunk) >= config.chunk_size:
                produced += _produce_all(txn, transform(iter(chunk)))
                chunk = []
        if chunk:
            produced += _produce_all(txn, transform(iter(chunk)))
        done = TopicPartition(
            config.progress_topic, slice_index, batch_id + 1, metadata=_marker_metadata(slices)
        )
        txn.commit([done], consumer.consumer_group_metadata())  # 3. output + marker
        return SliceResult(batch_id, slice_index, skipped=False, records_out=produced)
    except BaseException:  # Kafka errors arrive translated (sdk._client): abort, re-raise
        _abandon(txn)
        raise
    finally:
        with contextlib.suppress(Exception):
            consumer.close()
        txn.close()
        producer.close()  # no client left: only marks it closed


def _abandon(txn: TransactionSession) -> None:
    """Abort the open transaction; if that fails, the next attempt's init aborts it."""
    if txn.open:
        with contextlib.suppress(KafkaClientError):
            txn.abort()


def _produce_all(txn: TransactionSession, outputs: Iterable[OutputRecord]) -> int:
    n = 0
    for out in outputs:
        txn.produce(out)
        n += 1
    return n


class ExactlyOnceStreamingSink:
    """Writes each micro-batch of a stream exactly once, through ``foreachBatch``.

    The sink is configured once; the transform is given where the batches are written, as a
    handler is on every front end::

        sink = ExactlyOnceStreamingSink(config)
        query = (df.writeStream.foreachBatch(sink.foreach_batch(transform))
                 .option("checkpointLocation", ...).start())

    What must be deterministic for a batch id (see docs/spark.md): the multiset of the batch's
    rows and their slice-column values. Spark's Kafka source guarantees the rows (a batch's
    offset ranges are in the checkpoint's offset log before the batch runs) but *not* the order
    of its partitions after a restart, hence slicing by column values, never by Spark's
    partition index. A random UDF or a changing table between source and sink breaks it. Row
    order inside a slice does not matter.

    Args:
        config: The sink configuration.
        transform: Deprecated, removed in 0.3: give the transform to :meth:`foreach_batch`.
        admin_factory: Makes the AdminClient on the driver (tests).

    Attributes:
        history: One list of :class:`SliceResult` per batch this driver wrote (last 100).
    """

    def __init__(
        self,
        config: StreamingSinkConfig,
        transform: RowTransform | None = None,
        *,
        admin_factory: Any = None,
    ) -> None:
        if transform is not None:
            moved("transform", "ExactlyOnceStreamingSink()", "foreach_batch()")
        self.config = config
        self.transform = transform
        self._admin_factory = admin_factory
        self.history: list[list[SliceResult]] = []
        self._keys: dict[int, list[int]] = {}  # slice count -> partition key per slice

    def foreach_batch(self, transform: RowTransform) -> Callable[[Any, int], None]:
        """The ``foreachBatch`` function that writes each micro-batch with ``transform``.

        Args:
            transform: ``iterator of Row -> iterable of OutputRecord`` (runs on the
                executors, pickled with cloudpickle).

        Returns:
            ``(batch_df, batch_id) -> None`` for ``df.writeStream.foreachBatch``; it writes
            through this sink (its :attr:`history` too).
        """
        return functools.partial(self._write_batch, transform)

    def __call__(self, batch_df: Any, batch_id: int) -> None:
        """Write one micro-batch with the transform given to the (deprecated) constructor.

        Raises:
            ConfigurationError: No transform was given to the constructor (use
                :meth:`foreach_batch`), or as :meth:`_write_batch`.
            Exception: As :meth:`_write_batch`.
        """
        if self.transform is None:
            raise ConfigurationError(
                "transform: give it to foreach_batch(transform) and that to foreachBatch",
                field="transform",
            )
        self._write_batch(self.transform, batch_df, batch_id)

    def _write_batch(self, transform: RowTransform, batch_df: Any, batch_id: int) -> None:
        """Write one micro-batch with ``transform`` (the ``foreachBatch`` work, on the driver).

        DataFrame APIs only (``mapInArrow``, ``repartition``, ``unionByName``), so it runs
        under Spark Connect too, where the callback runs beside the server.

        Raises:
            ConfigurationError: The batch is a replay with a different slice count than the
                run that committed part of it (the batch is not deterministic); or
                ``slice_columns=()`` under Spark Connect.
            Exception: A slice failed more often than Spark retries a task.
        """
        sliced, slices = self._sliced(batch_df)
        if slices == 0:
            return
        self._prepare(batch_id, slices)
        writer = slice_writer(
            self.config, transform, batch_id, slices, by_column=bool(self.config.slice_columns)
        )
        if not is_connect(batch_df):
            batch_df.sparkSession.sparkContext.setJobDescription(
                f"exactly-once sink {self.config.sink_name}: batch {batch_id}, {slices} slices"
            )
        rows = sliced.mapInArrow(writer, "result string").collect()
        results = [SliceResult(**json.loads(row["result"])) for row in rows]
        self.history.append(sorted(results, key=lambda r: r.slice_index))
        del self.history[:-100]

    def _sliced(self, batch_df: Any) -> tuple[Any, int]:
        """The batch with every row in its slice's Spark partition, and the slice count.

        With ``slice_columns``: a column holding :func:`slice_of` the row's slice-column
        values (computed in Python, in ``mapInArrow``), one filler row per slice (so that every
        slice, even an empty one, is written with its marker, as a replay expects), hash
        partitioning by that column, and rows sorted by it within each partition. Without:
        the batch's own partitions, one slice each.

        Raises:
            ConfigurationError: A slice column is not a column of the batch, or
                ``slice_columns=()`` under Spark Connect (no partition count without RDDs).
        """
        columns = self.config.slice_columns
        if not columns:
            if is_connect(batch_df):
                raise ConfigurationError(
                    "slice_columns=(): keeping the batch's own partitioning needs its partition "
                    "count, which Spark Connect does not expose (no RDD API); name slice "
                    "columns instead",
                    field="slice_columns",
                )
            return batch_df, int(batch_df.rdd.getNumPartitions())
        missing = [c for c in columns if c not in batch_df.columns]
        if missing:
            raise ConfigurationError(
                f"slice_columns: {missing} not in the batch's columns {batch_df.columns}; name "
                "columns that exist, or () to keep the batch's own (deterministic) partitioning",
                field="slice_columns",
            )
        from pyspark.sql import functions as sql
        from pyspark.sql.types import BooleanType, IntegerType, StructField, StructType

        n = self.config.slices
        schema = batch_df.schema
        extended = StructType(
            [
                *schema.fields,
                StructField(SLICE, IntegerType()),
                StructField(FILLER, BooleanType()),
                StructField(KEY, IntegerType()),
            ]
        )
        keys = self._partition_keys(batch_df.sparkSession, n)
        with_slice = batch_df.mapInArrow(slice_adder(tuple(columns), n, keys), extended)
        filler_keys = sql.create_map(*[sql.lit(x) for i, k in enumerate(keys) for x in (i, k)])
        fillers = batch_df.sparkSession.range(n).select(
            *[sql.lit(None).cast(f.dataType).alias(f.name) for f in schema.fields],
            sql.col("id").cast("int").alias(SLICE),
            sql.lit(True).alias(FILLER),
            filler_keys[sql.col("id").cast("int")].alias(KEY),
        )
        # hash partitioning of the key column puts slice i in Spark partition i: one task per
        # slice, as with the RDD partitioner before (a blocked or failed slice holds up no other)
        # (sorted by slice all the same: a writer must never see one slice's rows split)
        sliced = (
            with_slice.unionByName(fillers)
            .repartition(n, KEY)
            .drop(KEY)
            .sortWithinPartitions(SLICE)
        )
        return sliced, n

    def _partition_keys(self, spark: Any, n: int) -> list[int]:
        """For each slice ``i``, an int whose Spark hash partition among ``n`` is ``i``.

        ``repartition(n, col)`` places a row in ``pmod(hash(col), n)`` (Murmur3, seed 42);
        asking Spark (once per slice count) keeps the mapping Spark's own.

        Raises:
            ConfigurationError: No key was found for some slice (cannot happen for n <= 10,000
                in practice; checked rather than assumed).
        """
        if n not in self._keys:
            from pyspark.sql import functions as sql

            ids = spark.range(0, 64 * n).select(
                sql.col("id").cast("int").alias("k"),
                sql.pmod(sql.hash(sql.col("id").cast("int")), sql.lit(n)).alias("p"),
            )
            first: dict[int, int] = {}
            for row in ids.collect():
                first.setdefault(int(row["p"]), int(row["k"]))
            if len(first) < n:
                raise ConfigurationError(
                    f"slices={n}: no partition key found for every slice", field="slices"
                )
            self._keys[n] = [first[i] for i in range(n)]
        return self._keys[n]

    def _prepare(self, batch_id: int, slices: int) -> None:
        """Grow the progress topic to ``slices`` partitions; refuse a changed slice count.

        Raises:
            ConfigurationError: A replay of ``batch_id`` has a different slice count.
            KafkaClientError: An admin request failed.
        """
        from confluent_kafka.cimpl import NewPartitions

        producer = self.config.producer
        admin = (self._admin_factory or admin_client)(
            admin_config(producer.bootstrap_servers, producer.security.render(), producer.extras)
        )
        topic = self.config.progress_topic
        with translating(f"list_topics({topic})"):
            meta = admin.list_topics(topic=topic, timeout=30).topics.get(topic)
        have = len(meta.partitions) if meta is not None and meta.error is None else 0
        if have == 0:
            raise ConfigurationError(
                f"progress_topic: topic {topic!r} does not exist; create it (1 partition is "
                "enough, it grows with the slice count)",
                field="progress_topic",
            )
        if have < slices:
            fut = admin.create_partitions([NewPartitions(topic, slices)])[topic]
            with translating("create_partitions"):
                fut.result(30)
            self._wait_partitions(admin, topic, slices)
        self._check_replay(batch_id, slices)

    @staticmethod
    def _wait_partitions(admin: Any, topic: str, count: int) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            meta = admin.list_topics(topic=topic, timeout=10).topics.get(topic)
            if meta is not None and len(meta.partitions) >= count:
                return
            time.sleep(0.2)

    def _check_replay(self, batch_id: int, slices: int) -> None:
        from confluent_kafka import Consumer, TopicPartition

        client = Consumer(
            {
                "bootstrap.servers": self.config.producer.bootstrap_servers,
                "group.id": self.config.group,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
        topic = self.config.progress_topic
        try:
            tps = [TopicPartition(topic, i) for i in range(slices)]
            got = fetch_committed(client, tps, 60.0, f"batch markers of {self.config.group}")
        finally:
            client.close()
        for tp in got:
            if tp.offset != batch_id + 1 or not tp.metadata:
                continue
            try:
                before = int(json.loads(tp.metadata).get("slices", slices))
            except (ValueError, AttributeError):
                continue
            if before != slices:
                raise ConfigurationError(
                    f"batch {batch_id} is replayed with {slices} slices but {before} when part "
                    "of it was committed: the batch DataFrame is not deterministic (see "
                    "docs/spark.md), writing it would duplicate or lose records",
                    field="batch",
                )
