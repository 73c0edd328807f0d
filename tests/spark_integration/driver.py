"""A Spark driver process for the kill tests: ``python -m tests.spark_integration.driver JSON``.

Modes: ``batch`` (our exactly-once job), ``native`` (Spark's Kafka sink on the same workload),
``stream`` (Structured Streaming with our foreachBatch sink). Prints ``RESULT <json>`` at the end.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from typing import Any

from sdk.profiles import ConsumerProfile, ProducerProfile
from sdk.testing.spark_jars import resolve_spark_kafka_jars
from spark_integration._batch import ExactlyOnceBatchJob
from spark_integration._config import BatchJobConfig
from spark_integration._native import read_kafka, read_kafka_stream
from spark_integration._session import local_session, session
from spark_integration._streaming import ExactlyOnceStreamingSink, StreamingSinkConfig
from tests.spark_integration._support import ROOT
from tests.spark_integration.transforms import CopyRecords, CopyRows, FaultRules, NativeRows


def _rules(a: dict[str, Any]) -> FaultRules:
    return FaultRules(
        fail_partitions=a.get("fail_partitions", ()),
        fail_after=a.get("fail_after", 0),
        block_at=a.get("block_at"),
        block_dir=a.get("block_dir"),
        block_partitions=a.get("block_partitions"),
        block_after=a.get("block_after", 0),
    )


def _session(a: dict[str, Any], app: str, jars: Any = ()) -> Any:
    """``master`` in the args: a standalone cluster or Spark Connect; else local mode."""
    master = a.get("master")
    if master is None:
        return local_session(app, jars=jars)
    return session(
        master,
        app,
        jars=jars,
        python_path=[str(ROOT)],
        conf={"spark.driver.host": "127.0.0.1", "spark.executor.memory": "512m"},
    )


def batch(a: dict[str, Any]) -> dict[str, Any]:
    spark = _session(a, "eos-batch")
    config = BatchJobConfig.exactly_once(
        job_name=a["job"],
        input_topics=[a["src"]],
        bootstrap_servers=a["bs"],
        group_id=a["group"],
        transactional_id_prefix=a["prefix"],
        max_records_per_transaction=a.get("chunk", 5000),
        progress_interval_s=a.get("progress_s", 2.0),
        consumer={"failure": {"attempts": 1}},
    )
    job = ExactlyOnceBatchJob(spark, config, progress=print)
    started = time.monotonic()
    result = job.run(CopyRecords(a["dst"], _rules(a)))
    return {
        "seconds": time.monotonic() - started,
        "job_seconds": result.duration_s,
        "results": [asdict(r) for r in result.results],
    }


def native(a: dict[str, Any]) -> dict[str, Any]:
    from pyspark.sql.types import BinaryType, StructField, StructType

    spark = local_session("native-batch", jars=resolve_spark_kafka_jars().jars)
    consumer = ConsumerProfile(
        guarantee="exactly_once", bootstrap_servers=a["bs"], group_id=a["group"]
    )
    started = time.monotonic()
    df = read_kafka(spark, consumer, [a["src"]])
    schema = StructType([StructField("key", BinaryType()), StructField("value", BinaryType())])
    rows = df.rdd.mapPartitions(NativeRows(_rules(a)))
    out = spark.createDataFrame(rows, schema)
    (
        out.write.format("kafka")
        .option("kafka.bootstrap.servers", a["bs"])
        .option("topic", a["dst"])
        .save()
    )
    return {"seconds": time.monotonic() - started}


def stream(a: dict[str, Any]) -> dict[str, Any]:
    spark = _session(a, "eos-stream", resolve_spark_kafka_jars().jars)
    consumer = ConsumerProfile(
        guarantee="exactly_once", bootstrap_servers=a["bs"], group_id=a["group"]
    )
    df = read_kafka_stream(spark, consumer, [a["src"]], maxOffsetsPerTrigger=str(a["per_batch"]))
    config = StreamingSinkConfig(
        sink_name=a["job"],
        producer=ProducerProfile(
            guarantee="exactly_once", bootstrap_servers=a["bs"], transactional_id_prefix=a["prefix"]
        ),
        progress_topic=a["progress_topic"],
    )
    history: list[list[dict[str, Any]]] = []
    block_batch = a.get("block_batch")
    if str(a.get("master", "")).startswith("sc://"):
        # Spark Connect runs foreachBatch beside the server: the sink's function goes there
        # (no history comes back to this client)
        sink = ExactlyOnceStreamingSink(config)
        query = (
            df.writeStream.foreachBatch(sink.foreach_batch(CopyRows(a["dst"])))
            .option("checkpointLocation", a["checkpoint"])
            .queryName(a["job"])
            .start()
        )
        query.processAllAvailable()
        query.stop()
        return {"history": history}

    def each(batch_df: Any, batch_id: int) -> None:
        rules = _rules(a) if batch_id == block_batch else FaultRules()
        sink = ExactlyOnceStreamingSink(config)
        sink.foreach_batch(CopyRows(a["dst"], rules))(batch_df, batch_id)
        history.append([asdict(r) for r in sink.history[-1]] if sink.history else [])
        print(f"batch {batch_id} done: {history[-1]}", flush=True)

    query = (
        df.writeStream.foreachBatch(each)
        .option("checkpointLocation", a["checkpoint"])
        .queryName(a["job"])
        .start()
    )
    query.processAllAvailable()
    query.stop()
    return {"history": history}


def main() -> None:
    import faulthandler

    faulthandler.enable()
    args = json.loads(sys.argv[1])
    if args.get("dump_after"):
        faulthandler.dump_traceback_later(args["dump_after"], repeat=True)
    result = {"batch": batch, "native": native, "stream": stream}[args["mode"]](args)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
