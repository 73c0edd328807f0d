"""The batch job (columnar transform) and the native-source helper in one SparkSession: the
native reader starts exactly at the offsets the job committed."""

from __future__ import annotations

import json
from typing import Any

import pytest
from confluent_kafka import Producer

from spark_integration import (
    BatchJobConfig,
    ExactlyOnceBatchJob,
    batch_transform,
    kafka_source_options,
    read_kafka,
)
from tests.spark_integration._support import committed, read_values, seed, verdict

pytestmark = [pytest.mark.spark, pytest.mark.broker]

N = 4_000


class CopyColumns:
    """Columnar transform: one call per batch of records, dict of columns in and out."""

    def __init__(self, topic: str) -> None:
        self.topic = topic

    def __call__(self, batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        return {"value": list(batch["value"]), "key": batch["key"]}


def test_job_then_native_reader_starts_at_the_committed_offsets(
    spark: Any, kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(2), make_topic(2), make_group()
    seed(bs, src, N, transactional=True)
    config = BatchJobConfig.exactly_once(
        job_name="cols",
        input_topics=[src],
        bootstrap_servers=bs,
        group_id=group,
        transactional_id_prefix=f"{group}-",
        max_records_per_transaction=1_500,
    )
    lines: list[str] = []
    job = ExactlyOnceBatchJob(spark, config, progress=lines.append)
    result = job.run(batch_transform(CopyColumns(dst), batch_format="columns", output_topic=dst))
    assert lines[0].startswith("exactly-once batch job 'cols'") and "done:" in lines[-1]
    assert result.records_in == N and result.transactions >= 4
    v = verdict(read_values(bs, dst), N)
    assert (v.count, v.duplicates, v.missing) == (N, 0, 0)

    # the native source, started from the group's committed offsets, sees nothing new ...
    ends = committed(bs, group, src, 2)
    options = kafka_source_options(config.processing.consumer, [src])
    assert json.loads(options["startingOffsets"]) == {src: {"0": ends[0], "1": ends[1]}}
    assert options["kafka.isolation.level"] == "read_committed"
    assert read_kafka(spark, config.processing.consumer, [src]).count() == 0
    # ... and exactly the records added after the job
    p = Producer({"bootstrap.servers": bs})
    for i in range(300):
        p.produce(src, value=f"new-{i}", key=str(i))
    assert p.flush(30) == 0
    rows = read_kafka(spark, config.processing.consumer, [src]).select("value").collect()
    assert sorted(r.value.decode() for r in rows) == sorted(f"new-{i}" for i in range(300))
    assert job.plan()[0].size + job.plan()[1].size == 300
