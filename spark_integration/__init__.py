"""PySpark helpers for exactly-once Kafka read-process-write jobs (see docs/spark.md).

* :class:`ExactlyOnceBatchJob`: Kafka → PySpark → Kafka in one transaction per chunk, one Spark
  task per input partition, re-runnable after any failure.
* :class:`ExactlyOnceStreamingSink`: a ``foreachBatch`` sink that does not duplicate a replayed
  batch (per-slice transactional.id and a batch marker committed in the same transaction).
* :func:`kafka_source_options` / :func:`read_kafka`: Spark's native Kafka source with
  read_committed and the group's committed offsets as ``startingOffsets``.
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
from spark_integration._session import local_session, session
from spark_integration._streaming import (
    ExactlyOnceStreamingSink,
    RowTransform,
    SliceResult,
    StreamingSinkConfig,
    slice_of,
    write_slice,
)
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
    "batch_transform",
    "check_spark_conf",
    "explain_ranges",
    "format_progress",
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
    "session",
    "slice_of",
    "write_slice",
]

_DEPRECATED = {
    "transactional_id_for": ("spark_integration.range_transactional_id", range_transactional_id),
}


def __getattr__(name: str) -> Any:
    """``transactional_id_for``: deprecated, removed in 0.3; it is :func:`range_transactional_id`.

    (The SDK's :func:`sdk.core.session.transactional_id_for`, with another signature, keeps
    its name.)
    """
    return deprecated_name(__name__, name, _DEPRECATED)
