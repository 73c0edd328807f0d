"""Resolving Spark's Kafka connector jars (spark-sql-kafka-0-10) from Maven Central, once.

pyspark ships Spark without its Kafka connector. :func:`resolve_spark_kafka_jars` runs
``mvn dependency:copy-dependencies`` on ``sdk/testing/resources/spark-kafka-pom.xml`` and keeps
only the four jars pyspark lacks (connector, token provider, kafka-clients, commons-pool2).
The connector of pyspark's own version is tried first; if Maven Central does not have it
(e.g. a pyspark newer than the published connector), earlier minor releases of the same major
version are tried, newest first, and the one used is recorded in the cache.
"""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from sdk.testing.errors import MavenError
from sdk.testing.tools import cache_root, find_mvn

__all__ = ["SparkKafkaJars", "connector_candidates", "resolve_spark_kafka_jars"]

_STAMP = ".complete"
_ARTIFACTS = (
    "spark-sql-kafka-0-10_2.13",
    "spark-token-provider-kafka-0-10_2.13",
    "kafka-clients",
    "commons-pool2",
)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class SparkKafkaJars:
    """A resolved Spark Kafka connector.

    Attributes:
        spark_version: The pyspark version it is for.
        connector_version: The connector version actually resolved.
        jars: The jar files (for ``spark.jars``).
    """

    def __init__(self, spark_version: str, connector_version: str, jars: list[Path]) -> None:
        self.spark_version = spark_version
        self.connector_version = connector_version
        self.jars = jars

    def __repr__(self) -> str:
        return (
            f"SparkKafkaJars(spark={self.spark_version!r}, "
            f"connector={self.connector_version!r}, jars={len(self.jars)})"
        )


def connector_candidates(spark_version: str) -> list[str]:
    """Connector versions to try for a pyspark version: itself, then x.(y-1).0 ... x.0.0.

    >>> connector_candidates("4.3.0")
    ['4.3.0', '4.2.0', '4.1.0', '4.0.0']
    """
    parts = spark_version.split(".")
    out = [spark_version]
    try:
        major, minor = int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        return out
    out += [f"{major}.{m}.0" for m in range(minor - 1, -1, -1)]
    return out


def resolve_spark_kafka_jars(
    spark_version: str | None = None,
    *,
    cache_dir: Path | None = None,
    mvn: str | None = None,
    progress: Callable[[str], None] = _stderr,
) -> SparkKafkaJars:
    """Return the Kafka connector jars for pyspark, resolving them with Maven on first use.

    Args:
        spark_version: pyspark version (default: the installed one).
        cache_dir: Cache root; default :func:`sdk.testing.tools.cache_root`.
        mvn: Path of ``mvn`` (default: found on ``PATH``).
        progress: Receives human-readable progress lines.

    Returns:
        The resolved :class:`SparkKafkaJars`.

    Raises:
        MavenError: Maven is missing, or no candidate connector version could be resolved.
    """
    if spark_version is None:
        import pyspark

        spark_version = str(pyspark.__version__)
    root = (cache_dir or cache_root()) / f"spark-kafka-{spark_version}"
    lib_dir = root / "libs"
    stamp = lib_dir / _STAMP
    if stamp.exists():
        return _load(spark_version, lib_dir)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists():
            return _load(spark_version, lib_dir)
        mvn_path = find_mvn(mvn)
        failures = []
        for version in connector_candidates(spark_version):
            progress(
                f"kafka-semantics: resolving spark-sql-kafka-0-10 {version} (for pyspark "
                f"{spark_version}) from Maven Central into {lib_dir} (first run only)..."
            )
            error = _run_maven(mvn_path, version, root)
            if error is None:
                jars = sorted(p.name for p in lib_dir.glob("*.jar"))
                stamp.write_text(version + "\n" + "\n".join(jars) + "\n")
                return _load(spark_version, lib_dir)
            failures.append(f"{version}: {error}")
        raise MavenError(
            f"Could not resolve Spark's Kafka connector for pyspark {spark_version} from Maven "
            "Central (tried " + "; ".join(failures) + "). Check that Maven Central is reachable "
            "(proxy settings live in ~/.m2/settings.xml), or pass the connector with "
            "spark.jars.packages=org.apache.spark:spark-sql-kafka-0-10_2.13:<version>."
        )


def _load(spark_version: str, lib_dir: Path) -> SparkKafkaJars:
    lines = (lib_dir / _STAMP).read_text().split()
    return SparkKafkaJars(spark_version, lines[0], [lib_dir / name for name in lines[1:]])


def _run_maven(mvn: str, version: str, root: Path) -> str | None:
    staging = Path(tempfile.mkdtemp(prefix="libs-", dir=root))
    pom = root / "spark-kafka-pom.xml"
    pom.write_bytes(
        (resources.files("sdk.testing") / "resources" / "spark-kafka-pom.xml").read_bytes()
    )
    cmd = [
        mvn,
        "-B",
        "-q",
        "-f",
        str(pom),
        f"-Dspark.version={version}",
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
        "-DincludeScope=runtime",
        "-DincludeArtifactIds=" + ",".join(_ARTIFACTS),
    ]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    except subprocess.TimeoutExpired:
        shutil.rmtree(staging, ignore_errors=True)
        return "Maven did not finish within 15 minutes"
    found = {a for a in _ARTIFACTS if any(staging.glob(f"{a}-*.jar"))}
    if proc.returncode != 0 or len(found) != len(_ARTIFACTS):
        shutil.rmtree(staging, ignore_errors=True)
        tail = " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])
        return f"exit code {proc.returncode}: {tail[:400]}"
    lib_dir = root / "libs"
    if lib_dir.exists():
        shutil.rmtree(lib_dir)
    staging.rename(lib_dir)
    return None
