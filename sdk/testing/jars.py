"""Resolving the Apache Kafka broker jars from Maven Central, once, into a cache.

The first call runs ``mvn dependency:copy-dependencies`` on the small pom shipped in
``sdk/testing/resources/broker-pom.xml``; later calls find the completed cache and touch neither
Maven nor the network.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from sdk.testing.errors import MavenError
from sdk.testing.tools import cache_root, find_mvn

__all__ = [
    "DEFAULT_KAFKA_VERSION",
    "KAFKA_VERSION_ENV",
    "SUPPORTED_KAFKA_VERSIONS",
    "BrokerJars",
    "resolve_broker_jars",
    "session_kafka_version",
]

DEFAULT_KAFKA_VERSION = "4.4.0"
"""The Apache Kafka release the harness runs unless told otherwise."""

SUPPORTED_KAFKA_VERSIONS = ("3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0")
"""The broker matrix (docs/compatibility.md): the latest patch of each line Maven Central serves."""

KAFKA_VERSION_ENV = "KSEM_KAFKA_VERSION"
"""Environment variable that picks the broker version of every cluster a process starts."""


def session_kafka_version() -> str:
    """The broker version a cluster runs when none is given: ``$KSEM_KAFKA_VERSION`` or the default.

    Read at each cluster's construction, so one variable picks the broker of a whole pytest
    session (``./dev.sh compat`` sets it per version).
    """
    return os.environ.get(KAFKA_VERSION_ENV) or DEFAULT_KAFKA_VERSION


_STAMP = ".complete"
_log = logging.getLogger(__name__)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class BrokerJars:
    """A resolved set of broker jars.

    Attributes:
        kafka_version: The Apache Kafka version.
        lib_dir: Directory holding every jar of the broker's classpath.
        log4j_config: The quiet log4j2 configuration file for broker processes.
        from_cache: True if no Maven run was needed.
    """

    def __init__(self, kafka_version: str, lib_dir: Path, log4j_config: Path, from_cache: bool):
        self.kafka_version = kafka_version
        self.lib_dir = lib_dir
        self.log4j_config = log4j_config
        self.from_cache = from_cache

    @property
    def classpath(self) -> str:
        """The JVM classpath (a wildcard over ``lib_dir``)."""
        return str(self.lib_dir / "*")

    def __repr__(self) -> str:
        return f"BrokerJars(kafka_version={self.kafka_version!r}, lib_dir='{self.lib_dir}')"


def _resource(name: str) -> bytes:
    return (resources.files("sdk.testing") / "resources" / name).read_bytes()


def resolve_broker_jars(
    kafka_version: str = DEFAULT_KAFKA_VERSION,
    *,
    cache_dir: Path | None = None,
    mvn: str | None = None,
    progress: Callable[[str], None] = _stderr,
) -> BrokerJars:
    """Return the broker jars for ``kafka_version``, resolving them with Maven on first use.

    Safe to call from several processes at once (a file lock serialises the first resolution).

    Args:
        kafka_version: Apache Kafka version, e.g. ``"4.3.1"``.
        cache_dir: Cache root; default :func:`sdk.testing.tools.cache_root`.
        mvn: Path of the Maven executable (default: found on ``PATH``).
        progress: Receives human-readable progress lines (default: stderr).

    Returns:
        The resolved :class:`BrokerJars`.

    Raises:
        MavenError: Maven is missing, or it could not resolve the jars (message holds the tail
            of Maven's output and the likely fixes).
    """
    root = (cache_dir or cache_root()) / f"kafka-{kafka_version}"
    lib_dir = root / "libs"
    log4j = root / "log4j2.properties"
    if (lib_dir / _STAMP).exists():
        return BrokerJars(kafka_version, lib_dir, log4j, from_cache=True)
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (lib_dir / _STAMP).exists():  # another process finished it while we waited
            return BrokerJars(kafka_version, lib_dir, log4j, from_cache=True)
        mvn_path = find_mvn(mvn)
        progress(
            f"kafka-semantics: resolving Apache Kafka {kafka_version} broker jars from Maven "
            f"Central into {lib_dir} (first run only)..."
        )
        started = time.monotonic()
        _run_maven(mvn_path, kafka_version, root)
        log4j.write_bytes(_resource("log4j2.properties"))
        jars = sorted(p.name for p in lib_dir.glob("*.jar"))
        (lib_dir / _STAMP).write_text("\n".join(jars) + "\n")
        progress(
            f"kafka-semantics: {len(jars)} jars resolved in {time.monotonic() - started:.1f}s."
        )
    return BrokerJars(kafka_version, lib_dir, log4j, from_cache=False)


def _run_maven(mvn: str, kafka_version: str, root: Path) -> None:
    staging = Path(tempfile.mkdtemp(prefix="libs-", dir=root))
    pom = root / "broker-pom.xml"
    pom.write_bytes(_resource("broker-pom.xml"))
    cmd = [
        mvn,
        "-B",
        "-f",
        str(pom),
        f"-Dkafka.version={kafka_version}",
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
        "-DincludeScope=runtime",
    ]
    _log.info("running %s", " ".join(cmd))
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
    except subprocess.TimeoutExpired as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise MavenError(
            f"Maven did not finish resolving Apache Kafka {kafka_version} within 30 minutes. "
            "Check that Maven Central is reachable (proxy settings live in ~/.m2/settings.xml) "
            "and try again."
        ) from exc
    if proc.returncode != 0 or not any(staging.glob("kafka_2.13-*.jar")):
        shutil.rmtree(staging, ignore_errors=True)
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise MavenError(
            f"Maven could not resolve the Apache Kafka {kafka_version} broker jars "
            f"(exit code {proc.returncode}). Check that the version exists on Maven Central "
            "(org.apache.kafka:kafka_2.13), that Maven Central is reachable (proxy settings live "
            f"in ~/.m2/settings.xml), then try again. Command: {' '.join(cmd)}\n"
            f"Last lines of Maven's output:\n{tail}"
        )
    lib_dir = root / "libs"
    if lib_dir.exists():
        shutil.rmtree(lib_dir)
    os.replace(staging, lib_dir)
