"""The Kafka Streams peer of the latency benchmark: resolve its jars, compile it, start it.

The first use runs ``mvn dependency:copy-dependencies`` on ``streams/pom.xml`` (Kafka Streams
and its runtime dependencies from Maven Central) and ``javac`` on ``streams/CopyApp.java``,
both into the project's cache (:func:`sdk.testing.tools.cache_root`); later runs find the
completed cache and touch neither Maven nor javac. The classes are keyed by a hash of the
source, so an edited app is compiled again.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks._harness import progress
from sdk.testing.tools import cache_root, find_java, find_mvn

STREAMS_VERSION = "4.3.1"
HERE = Path(__file__).resolve().parent / "streams"
SOURCE = HERE / "CopyApp.java"
POM = HERE / "pom.xml"
_STAMP = ".complete"


@dataclass(frozen=True)
class StreamsApp:
    """A compiled CopyApp and the classpath it runs with."""

    java: str
    classpath: str

    def command(
        self,
        bootstrap: str,
        source: str,
        output: str,
        *,
        commit_interval_ms: int,
        guarantee: str,
        threads: int,
        state_dir: str,
        application_id: str,
    ) -> list[str]:
        """The command line of one CopyApp process (``guarantee``: Kafka Streams' name)."""
        return [
            self.java,
            "-Xmx512m",
            "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
            "-cp",
            self.classpath,
            "CopyApp",
            bootstrap,
            source,
            output,
            str(commit_interval_ms),
            guarantee,
            str(threads),
            state_dir,
            application_id,
        ]


def _javac(java: str) -> str:
    """The ``javac`` beside ``java`` (a JDK), else the one on PATH.

    Raises:
        RuntimeError: No javac: a JRE without the compiler.
    """
    beside = Path(os.path.realpath(java)).with_name("javac")
    found = str(beside) if beside.exists() else shutil.which("javac")
    if not found:
        raise RuntimeError(
            f"no javac beside {java} nor on PATH: the Kafka Streams peer needs a JDK"
        )
    return found


def _resolve(root: Path) -> Path:
    """The directory of Kafka Streams' runtime jars, resolved with Maven on first use.

    Raises:
        RuntimeError: Maven failed (the tail of its output is in the message).
    """
    libs = root / "libs"
    if (libs / _STAMP).exists():
        return libs
    progress(f"resolving Kafka Streams {STREAMS_VERSION} from Maven Central into {libs} ...")
    staging = Path(tempfile.mkdtemp(prefix="libs-", dir=root))
    cmd = [
        find_mvn(),
        "-B",
        "-f",
        str(POM),
        f"-Dkafka.version={STREAMS_VERSION}",
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
        "-DincludeScope=runtime",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
    if proc.returncode != 0 or not any(staging.glob("kafka-streams-*.jar")):
        shutil.rmtree(staging, ignore_errors=True)
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"Maven could not resolve Kafka Streams ({' '.join(cmd)}):\n{tail}")
    if libs.exists():
        shutil.rmtree(libs)
    os.replace(staging, libs)
    (libs / _STAMP).write_text("\n".join(sorted(p.name for p in libs.glob("*.jar"))) + "\n")
    return libs


def _compile(root: Path, java: str, classpath: str) -> Path:
    """The directory of CopyApp's classes, compiled on first use of this source.

    Raises:
        RuntimeError: javac failed.
    """
    digest = hashlib.sha256(SOURCE.read_bytes()).hexdigest()[:12]
    classes = root / f"classes-{digest}"
    if (classes / _STAMP).exists():
        return classes
    progress(f"compiling {SOURCE.name} into {classes} ...")
    staging = Path(tempfile.mkdtemp(prefix="classes-", dir=root))
    cmd = [_javac(java), "-d", str(staging), "-cp", classpath, str(SOURCE)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(f"javac failed:\n{proc.stderr[-2000:]}")
    if classes.exists():
        shutil.rmtree(classes)
    os.replace(staging, classes)
    (classes / _STAMP).write_text(digest + "\n")
    return classes


def build() -> StreamsApp:
    """Resolve and compile the app once (a file lock serialises concurrent first runs).

    Raises:
        RuntimeError: Maven or javac failed.
        JavaNotFoundError: No Java 17+.
        MavenError: No Maven, and the jars are not cached yet.
    """
    java = find_java()
    root = cache_root() / f"kafka-streams-{STREAMS_VERSION}"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        libs = _resolve(root)
        jars = str(libs / "*")
        classes = _compile(root, java, jars)
    return StreamsApp(java, f"{classes}{os.pathsep}{jars}")
