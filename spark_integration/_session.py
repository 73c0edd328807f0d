"""A local SparkSession with the settings the exactly-once helpers assume (tests, demos)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["local_session", "session"]


def local_session(
    app_name: str = "kafka-semantics",
    *,
    cores: int = 2,
    max_failures: int = 4,
    jars: Sequence[Path | str] = (),
    driver_memory: str = "768m",
    conf: Mapping[str, str] | None = None,
) -> Any:
    """Create (or get) a local-mode SparkSession for the exactly-once helpers.

    * ``local[cores,max_failures]``: in local mode Spark retries a failed task only when the
      master names a failure count;
    * speculation off, UI off, few shuffle partitions, modest driver memory;
    * Python workers run this interpreter (``PYSPARK_PYTHON``), so they import the same
      packages as the driver;
    * ``jars``: extra jars, e.g. the Kafka connector from
      :func:`sdk.testing.spark_jars.resolve_spark_kafka_jars`.

    Args:
        app_name: Spark application name.
        cores: Local worker threads.
        max_failures: Attempts per task (1 = no retry).
        jars: Jars to put on the driver/executor classpath.
        driver_memory: ``spark.driver.memory``.
        conf: More Spark settings (applied last).

    Returns:
        The ``pyspark.sql.SparkSession``.
    """
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(f"local[{cores},{max_failures}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.speculation", "false")
        .config("spark.sql.shuffle.partitions", str(cores))
        .config("spark.default.parallelism", str(cores))
        .config("spark.driver.memory", driver_memory)
        .config("spark.python.worker.reuse", "true")
        .config("spark.sql.streaming.forceDeleteTempCheckpointLocation", "true")
    )
    return _create(builder, jars, conf)


def session(
    master: str,
    app_name: str = "kafka-semantics",
    *,
    jars: Sequence[Path | str] = (),
    python_path: Sequence[str] = (),
    conf: Mapping[str, str] | None = None,
) -> Any:
    """A SparkSession for any master the exactly-once helpers run on.

    * ``local[...]``: :func:`local_session` (``local[N,F]`` parsed for cores and retries);
    * ``spark://host:port``: a standalone cluster; speculation off, ``python_path`` on the
      executors' ``PYTHONPATH`` (where your transforms and this package are importable, if
      they are not installed there), ``jars`` on the classpath;
    * ``sc://host:port``: a Spark Connect client (no SparkContext: the server has its jars
      and Python path; ``jars``, ``python_path`` and ``conf`` are not sent).

    Raises:
        ConfigurationError: An unknown master scheme.
    """
    from pyspark.sql import SparkSession

    from sdk.errors import ConfigurationError

    if master.startswith("sc://"):
        return SparkSession.builder.remote(master).getOrCreate()
    if master.startswith("local["):
        inner = master[len("local[") : -1].split(",")
        cores = (os.cpu_count() or 2) if inner[0] == "*" else int(inner[0])
        failures = int(inner[1]) if len(inner) > 1 else 1
        return local_session(app_name, cores=cores, max_failures=failures, jars=jars, conf=conf)
    if not master.startswith("spark://"):
        raise ConfigurationError(
            f"master {master!r}: use local[N,F], spark://host:port or sc://host:port",
            field="master",
        )
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.speculation", "false")
        .config("spark.ui.showConsoleProgress", "false")
    )
    if python_path:
        builder = builder.config("spark.executorEnv.PYTHONPATH", os.pathsep.join(python_path))
    return _create(builder, jars, conf)


def _create(builder: Any, jars: Sequence[Path | str], conf: Mapping[str, str] | None) -> Any:
    """Add the jars and the caller's settings (applied last), create, quiet the log."""
    if jars:
        builder = builder.config("spark.jars", ",".join(str(j) for j in jars))
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
