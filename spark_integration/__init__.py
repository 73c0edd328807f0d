"""PySpark helpers for exactly-once Kafka read-process-write jobs (see docs/spark.md).

* :class:`ExactlyOnceBatchJob`: Kafka → PySpark → Kafka in one transaction per chunk, one Spark
  task per input partition, re-runnable after any failure.
* :class:`ExactlyOnceStreamingSink`: a ``foreachBatch`` sink that does not duplicate a replayed
  batch (per-slice transactional.id and a batch marker committed in the same transaction).
* :func:`kafka_source_options` / :func:`read_kafka`: Spark's native Kafka source with
  read_committed and the group's committed offsets as ``startingOffsets``.
* :func:`from_registry_avro` / :func:`to_registry_avro`: records in a schema registry's wire
  format (Confluent's) decoded into and encoded from DataFrame columns.
"""

from typing import Any

from sdk._deprecation import deprecated_name
from spark_integration._batch import (
    BatchJobResult,
    ExactlyOnceBatchJob,
    check_spark_conf,
    is_connect,
)
from spark_integration._columnar import ColumnarTransform, batch_transform, records_to_columns
from spark_integration._config import BatchJobConfig
from spark_integration._native import (
    kafka_source_options,
    offsets_json,
    read_kafka,
    read_kafka_stream,
)
from spark_integration._progress import ProgressReporter, format_progress
from spark_integration._ranges import (
    PartitionRange,
    explain_ranges,
    plan_ranges,
    range_transactional_id,
)
from spark_integration._schemas import avro_spark_type, from_registry_avro, to_registry_avro
from spark_integration._session import local_session
from spark_integration._session import session as _session
from spark_integration._slicing import slice_of as _slice_of
from spark_integration._streaming import (
    ExactlyOnceStreamingSink,
    RowTransform,
    SliceResult,
    StreamingSinkConfig,
)
from spark_integration._streaming import write_slice as _write_slice
from spark_integration._task import RangeResult, RecordTransform, run_range

__all__ = [
    "BatchJobConfig",
    "BatchJobResult",
    "ColumnarTransform",
    "ExactlyOnceBatchJob",
    "ExactlyOnceStreamingSink",
    "PartitionRange",
    "ProgressReporter",
    "RangeResult",
    "RecordTransform",
    "RowTransform",
    "SliceResult",
    "StreamingSinkConfig",
    "avro_spark_type",
    "batch_transform",
    "check_spark_conf",
    "explain_ranges",
    "format_progress",
    "from_registry_avro",
    "is_connect",
    "kafka_source_options",
    "local_session",
    "offsets_json",
    "plan_ranges",
    "range_transactional_id",
    "read_kafka",
    "read_kafka_stream",
    "records_to_columns",
    "run_range",
    "to_registry_avro",
]

_DEPRECATED = {
    "transactional_id_for": (
        "use spark_integration.range_transactional_id",
        range_transactional_id,
    ),
    "session": (
        "build the SparkSession with pyspark (SparkSession.builder.master(url), or "
        ".remote('sc://...') for Spark Connect), or use local_session()",
        _session,
    ),
    "slice_of": ("it is internal to ExactlyOnceStreamingSink, which slices the rows", _slice_of),
    "write_slice": ("it is internal to ExactlyOnceStreamingSink.foreach_batch", _write_slice),
}


def __getattr__(name: str) -> Any:
    """Deprecated names, removed in 0.3.

    ``transactional_id_for`` is :func:`range_transactional_id` (the SDK's
    :func:`sdk.core.session.transactional_id_for`, with another signature, keeps its name);
    ``session``, ``slice_of`` and ``write_slice`` are no longer exported (the streaming sink's
    internals, and a session factory for the tests' Spark clusters).
    """
    return deprecated_name(__name__, name, _DEPRECATED)
