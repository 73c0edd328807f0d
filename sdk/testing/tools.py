"""Locating the external tools the local cluster needs: a Java runtime and Maven.

Each lookup fails with a one-paragraph :class:`~sdk.testing.errors.ClusterError` that names the fix.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from sdk.testing.errors import JavaNotFoundError, MavenError

__all__ = ["MIN_JAVA", "cache_root", "find_java", "find_mvn", "java_major_version"]

MIN_JAVA = 17
"""Apache Kafka 4.x brokers need Java 17 or newer."""

_VERSION = re.compile(r'version "(\d+)(?:\.(\d+))?')


def cache_root() -> Path:
    """Return the cache directory for broker jars and cluster state.

    ``$KAFKA_SEMANTICS_CACHE_DIR`` wins; else ``$XDG_CACHE_HOME/kafka-semantics``; else
    ``~/.cache/kafka-semantics``.
    """
    explicit = os.environ.get("KAFKA_SEMANTICS_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "kafka-semantics"


def java_major_version(java: str) -> int:
    """Run ``java -version`` and return its major version (8 for "1.8.0", 17 for "17.0.1").

    Args:
        java: Path of the ``java`` executable.

    Raises:
        JavaNotFoundError: It cannot be run or its version cannot be read.
    """
    try:
        proc = subprocess.run(
            [java, "-version"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise JavaNotFoundError(
            f"Could not run '{java} -version' ({exc}). The local Kafka cluster needs Java "
            f"{MIN_JAVA}+: install a JDK/JRE (Debian/Ubuntu: 'apt-get install "
            "openjdk-17-jre-headless') or point KAFKA_SEMANTICS_JAVA or JAVA_HOME at one."
        ) from exc
    match = _VERSION.search(proc.stderr + proc.stdout)
    if not match:
        raise JavaNotFoundError(
            f"'{java} -version' printed no version we understand: "
            f"{(proc.stderr or proc.stdout).strip()[:200]!r}. Point KAFKA_SEMANTICS_JAVA or "
            f"JAVA_HOME at a Java {MIN_JAVA}+ runtime."
        )
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8.0_392" style
        major = int(match.group(2))
    return major


def find_java(java: str | None = None) -> str:
    """Find a Java runtime of version 17 or newer.

    Order: the ``java`` argument, ``$KAFKA_SEMANTICS_JAVA``, ``$JAVA_HOME/bin/java``, ``java`` on
    ``PATH``.

    Args:
        java: Explicit path of a ``java`` executable.

    Returns:
        The path of a suitable ``java``.

    Raises:
        JavaNotFoundError: None is found, or the one found is older than 17.
    """
    candidate = java or os.environ.get("KAFKA_SEMANTICS_JAVA")
    if not candidate and os.environ.get("JAVA_HOME"):
        home_java = Path(os.environ["JAVA_HOME"]) / "bin" / "java"
        if home_java.exists():
            candidate = str(home_java)
    if not candidate:
        candidate = shutil.which("java")
    if not candidate:
        raise JavaNotFoundError(
            f"No 'java' found (checked KAFKA_SEMANTICS_JAVA, JAVA_HOME and PATH). The local "
            f"Kafka cluster runs Apache Kafka 4.x, which needs Java {MIN_JAVA}+: install one "
            "(Debian/Ubuntu: 'apt-get install openjdk-17-jre-headless'; macOS: 'brew install "
            "openjdk@17') or set KAFKA_SEMANTICS_JAVA to its java binary. Or skip the local "
            "cluster entirely by setting KAFKA_BOOTSTRAP_SERVERS to an existing cluster."
        )
    major = java_major_version(candidate)
    if major < MIN_JAVA:
        raise JavaNotFoundError(
            f"'{candidate}' is Java {major}, but Apache Kafka 4.x brokers need Java "
            f"{MIN_JAVA}+. Install Java {MIN_JAVA} or newer and put it first on PATH, or set "
            "KAFKA_SEMANTICS_JAVA (or JAVA_HOME) to it."
        )
    return candidate


def find_mvn(mvn: str | None = None) -> str:
    """Find the Maven executable used to resolve the broker jars.

    Args:
        mvn: Explicit path of ``mvn``; else ``$KAFKA_SEMANTICS_MVN``, else ``mvn`` on ``PATH``.

    Returns:
        The path of ``mvn``.

    Raises:
        MavenError: Maven is not installed or the given path does not exist.
    """
    candidate = mvn or os.environ.get("KAFKA_SEMANTICS_MVN") or "mvn"
    found = shutil.which(candidate)
    if not found:
        raise MavenError(
            f"Maven ('{candidate}') was not found. The local Kafka cluster downloads the Apache "
            "Kafka broker jars from Maven Central once, with Maven: install it (Debian/Ubuntu: "
            "'apt-get install maven'; macOS: 'brew install maven') or set KAFKA_SEMANTICS_MVN "
            "to its path. Once the jars are cached, Maven is no longer needed."
        )
    return found
