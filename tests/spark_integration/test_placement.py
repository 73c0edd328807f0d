"""The Spark output paths place keys by the profile's partitioner, like Java.

The batch task and the streaming sink once produced with a raw confluent-kafka producer
rendered without the profile's partitioner (CRC32 instead of murmur2). Both now produce through
the transactional session's SDK Producer; every key must land where Java's producer puts it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Producer as RawProducer

from sdk.processor import OutputRecord
from sdk.profiles import ProducerProfile
from spark_integration import (
    BatchJobConfig,
    ExactlyOnceBatchJob,
    ExactlyOnceStreamingSink,
    StreamingSinkConfig,
)
from tests.placement import java_partition, placement

pytestmark = [pytest.mark.spark, pytest.mark.broker]

PARTITIONS = 12
KEYS = [f"key-{i}".encode() for i in range(120)]
JAVA = {k: {java_partition(k, PARTITIONS)} for k in KEYS}


class CopyMessages:
    """Batch-job transform (runs on the executors): keep key and value."""

    def __init__(self, topic: str) -> None:
        self.topic = topic

    def __call__(self, records: Iterator[Any]) -> list[OutputRecord]:
        return [OutputRecord(self.topic, r.value, r.key) for r in records]


class CopyRows:
    """Streaming-sink transform (runs on the executors): one output per row."""

    def __init__(self, topic: str) -> None:
        self.topic = topic

    def __call__(self, rows: Iterator[Any]) -> list[OutputRecord]:
        return [OutputRecord(self.topic, bytes(r.value), bytes(r.key)) for r in rows]


def test_batch_job_places_keys_like_java(
    spark: Any, kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(3), make_topic(PARTITIONS), make_group()
    seed = RawProducer({"bootstrap.servers": bs})
    for key in KEYS:
        seed.produce(src, value=b"v", key=key)
    assert seed.flush(30) == 0
    config = BatchJobConfig.exactly_once(
        job_name="placement",
        input_topics=[src],
        bootstrap_servers=bs,
        group_id=group,
        transactional_id_prefix=f"{group}-",
    )
    result = ExactlyOnceBatchJob(spark, config, progress=lambda _: None).run(CopyMessages(dst))
    assert result.records_in == len(KEYS)
    assert placement(bs, dst, len(KEYS)) == JAVA


def test_streaming_sink_places_keys_like_java(
    spark: Any, kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    dst, progress, name = make_topic(PARTITIONS), make_topic(1), make_group("sink")
    config = StreamingSinkConfig(
        sink_name=name,
        producer=ProducerProfile(
            guarantee="exactly_once", bootstrap_servers=bs, transactional_id_prefix=f"{name}-"
        ),
        progress_topic=progress,
        slice_columns=(),
        slices=2,
    )
    batch = spark.createDataFrame([(k, b"v") for k in KEYS], "key binary, value binary")
    ExactlyOnceStreamingSink(config).foreach_batch(CopyRows(dst))(batch.repartition(2), 0)
    assert placement(bs, dst, len(KEYS)) == JAVA
