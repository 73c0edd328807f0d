"""The exactly-once Kafka → PySpark → Kafka batch job (driver side).

DataFrame APIs only, so the same job runs on ``local[...]``, a standalone cluster
(``spark://``) and Spark Connect (``sc://``, which has no RDD API and no SparkContext): the
planned ranges are a DataFrame of range numbers (``spark.range`` with one partition per
range), each task runs its ranges in ``mapInArrow`` and returns its :class:`RangeResult` as a
JSON row, and the driver collects the rows.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sdk._deprecation import RenamedAttribute, moved
from sdk.errors import ConfigurationError
from spark_integration._config import BatchJobConfig
from spark_integration._progress import ProgressReporter, stderr_line
from spark_integration._ranges import PartitionRange, explain_ranges, plan_ranges
from spark_integration._task import RangeResult, RecordTransform, run_range

__all__ = ["BatchJobResult", "ExactlyOnceBatchJob", "check_spark_conf", "is_connect"]


def is_connect(spark: Any) -> bool:
    """True for a Spark Connect session (``sc://``): no SparkContext, no RDD API."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def _conf(spark: Any, key: str, default: str) -> str:
    """A Spark setting, read through the session (works under Spark Connect too)."""
    try:
        return str(spark.conf.get(key, default))
    except Exception:  # Connect: a setting the server will not disclose
        return default


def check_spark_conf(spark: Any, warn: Callable[[str], None] = stderr_line) -> None:
    """Refuse a SparkSession whose settings break the job's assumptions.

    * ``spark.speculation=true`` is rejected: a speculative copy of a task would fence the
      running one (same transactional.id) and both would repeat work; nothing is duplicated
      in the output, but the job can thrash. Speculation cannot be switched off in a running
      SparkContext, so the job refuses to start rather than silently ignoring it.
    * ``local[N]`` without a failure count runs every task once (no retry): a warning says so;
      use ``local[N,F]`` to let Spark retry failed task attempts.

    Raises:
        ConfigurationError: Speculative execution is on.
    """
    if _conf(spark, "spark.speculation", "false").strip().lower() == "true":
        raise ConfigurationError(
            "spark.speculation: speculative execution runs two attempts of one partition's "
            "task at once; they fence each other (one transactional.id per input partition). "
            "Start the SparkSession with spark.speculation=false",
            field="spark.speculation",
        )
    master = _conf(spark, "spark.master", "")
    if master.startswith("local[") and "," not in master:
        warn(
            f"warning: master {master!r} never retries a failed task; use local[N,F] "
            "(e.g. local[2,4]) for task retries"
        )


@dataclass
class BatchJobResult:
    """What a job run did.

    Attributes:
        ranges: The planned ranges (all input partitions).
        results: One result per task that had work, from its successful attempt.
        duration_s: Wall time of the Spark job in seconds.
    """

    ranges: list[PartitionRange]
    results: list[RangeResult] = field(default_factory=list)
    duration_s: float = 0.0

    seconds = RenamedAttribute[float]("duration_s")
    """Deprecated name of :attr:`duration_s`, removed in 0.3."""

    @property
    def records_in(self) -> int:
        """Input records transformed in committed transactions."""
        return sum(r.records_in for r in self.results)

    @property
    def records_out(self) -> int:
        """Output records committed."""
        return sum(r.records_out for r in self.results)

    @property
    def transactions(self) -> int:
        """Transactions committed."""
        return sum(r.transactions for r in self.results)

    def summary(self) -> str:
        """One line per partition (records, transactions, attempt) and a total line."""
        lines = []
        for r in sorted(self.results, key=lambda x: (x.topic, x.partition)):
            skipped = r.start - r.planned_start
            lines.append(
                f"  {r.topic}[{r.partition}] records_in={r.records_in} "
                f"records_out={r.records_out} transactions={r.transactions} aborts={r.aborts} "
                f"retries={r.retries} recreations={r.producer_recreations} "
                f"skipped_as_done={skipped} attempt={r.attempt} {r.duration_s:.1f}s"
            )
        rate = self.records_in / self.duration_s if self.duration_s > 0 else 0.0
        lines.append(
            f"  total: {self.records_in} in, {self.records_out} out, {self.transactions} "
            f"transactions in {self.duration_s:.1f}s ({rate:,.0f} records/s)"
        )
        return "\n".join(lines)


def _task_function(
    work: list[PartitionRange], config: BatchJobConfig, transform: RecordTransform
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """The ``mapInArrow`` function: range numbers in, one JSON result row per range out."""

    def task(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa
        from pyspark import TaskContext

        ctx = TaskContext.get()
        attempt = ctx.attemptNumber() if ctx is not None else -1
        for batch in batches:
            rows = []
            for index in batch.column(0).to_pylist():
                result = run_range(work[index], config, transform)
                result.attempt = attempt
                rows.append(json.dumps(dataclasses.asdict(result)))
            yield pa.RecordBatch.from_arrays([pa.array(rows, pa.string())], names=["result"])

    return task


class ExactlyOnceBatchJob:
    """Copy-and-transform Kafka input to Kafka output exactly once with PySpark.

    The driver plans one range per input topic-partition (committed offset → last stable
    offset) and runs one Spark task per range; each task runs :func:`run_range`. Re-running a
    job after a failure or a kill continues from the committed offsets: nothing is repeated in
    the read_committed output, nothing is lost.

    The transform is given to :meth:`run`, as a handler is on every front end::

        ExactlyOnceBatchJob(spark, config).run(upper)

    Args:
        spark: The SparkSession.
        config: The job configuration.
        transform: Deprecated, removed in 0.3: give the transform to :meth:`run`.
        progress: Receives the explain text, periodic progress lines and the summary.
    """

    def __init__(
        self,
        spark: Any,
        config: BatchJobConfig,
        transform: RecordTransform | None = None,
        *,
        progress: Callable[[str], None] = stderr_line,
    ) -> None:
        if transform is not None:
            moved("transform", "ExactlyOnceBatchJob()", "run()")
        self.spark = spark
        self.config = config
        self.transform = transform
        self._progress = progress

    def plan(self) -> list[PartitionRange]:
        """Plan the ranges now (committed offsets with require_stable, last stable offsets).

        Raises:
            KafkaClientError: An admin request failed.
            ConfigurationError: A partition has no committed offset and reset is 'error'.
        """
        return plan_ranges(
            self.config.processing.consumer,
            self.config.input_topics,
            job=self.config.job_name,
            transactional_id_prefix=self.config.prefix,
        )

    def explain(self, ranges: list[PartitionRange] | None = None) -> str:
        """Describe the ranges the job would run now (one line per input partition).

        Raises:
            KafkaClientError: An admin request failed.
        """
        return explain_ranges(
            ranges if ranges is not None else self.plan(),
            job=self.config.job_name,
            group=self.config.group_id,
        )

    def run(self, transform: RecordTransform | None = None) -> BatchJobResult:
        """Plan, explain, run one Spark task per non-empty range, report progress and summary.

        Args:
            transform: ``iterator of sdk.ConsumerRecord -> iterable of OutputRecord``; runs
                on the executors (it is pickled with cloudpickle). Required unless given to
                the (deprecated) constructor.

        Returns:
            The ranges and each task's result.

        Raises:
            ConfigurationError: No transform (or one here and one in the constructor), or
                speculative execution is on.
            KafkaClientError: Planning failed.
            Exception: The Spark job failed (a task failed more than Spark's retry budget);
                re-running the job continues from the committed offsets.
        """
        if transform is not None and self.transform is not None:
            raise ConfigurationError(
                "transform: given to both ExactlyOnceBatchJob() and run(); give it to run() only",
                field="transform",
            )
        transform = transform or self.transform
        if transform is None:
            raise ConfigurationError(
                "transform: give the transform to run(transform)", field="transform"
            )
        check_spark_conf(self.spark, self._progress)
        ranges = self.plan()
        self._progress(self.explain(ranges))
        work = [r for r in ranges if r.size > 0]
        result = BatchJobResult(ranges=ranges)
        if not work:
            self._progress("nothing to do: every partition is committed up to its stable end")
            return result
        self._describe(f"exactly-once {self.config.job_name}: {len(work)} partitions")
        started = time.monotonic()
        with ProgressReporter(
            self.config.processing.consumer,
            work,
            self.config.progress_interval_s,
            self._progress,
        ) as reporter:
            # one Spark partition (one task) per range; the ranges travel in the closure
            ranges_df = self.spark.range(0, len(work), 1, len(work))
            rows = ranges_df.mapInArrow(
                _task_function(work, self.config, transform), "result string"
            ).collect()
            result.results = [RangeResult(**json.loads(row["result"])) for row in rows]
            result.duration_s = time.monotonic() - started
            self._progress(reporter.report())
        self._progress(f"exactly-once {self.config.job_name} done:\n{result.summary()}")
        return result

    def _describe(self, text: str) -> None:
        """Name the Spark job in the UI (no SparkContext under Spark Connect: skipped)."""
        if not is_connect(self.spark):
            self.spark.sparkContext.setJobDescription(text)
