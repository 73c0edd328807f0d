"""The Kafka Streams peer of the latency benchmark: resolve its jars, compile it, start it.

The first use runs ``mvn dependency:copy-dependencies`` on ``streams/pom.xml`` (Kafka Streams
and its runtime dependencies from Maven Central) and ``javac`` on ``streams/CopyApp.java``,
both into the project's cache (:func:`sdk.testing.tools.cache_root`); later runs find the
completed cache and touch neither Maven nor javac. The classes are keyed by a hash of the
source, so an edited app is compiled again (:mod:`benchmarks._jvm`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from benchmarks import _jvm

STREAMS_VERSION = "4.3.1"
HERE = Path(__file__).resolve().parent / "streams"
SOURCE = HERE / "CopyApp.java"
POM = HERE / "pom.xml"
PEER = _jvm.PeerSource(
    label=f"Kafka Streams {STREAMS_VERSION}",
    pom=POM,
    source=SOURCE,
    cache_name=f"kafka-streams-{STREAMS_VERSION}",
    jar_glob="kafka-streams-*.jar",
    properties={"kafka.version": STREAMS_VERSION},
)


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


def build() -> StreamsApp:
    """Resolve and compile the app once (a file lock serialises concurrent first runs).

    Raises:
        RuntimeError: Maven or javac failed.
        JavaNotFoundError: No Java 17+.
        MavenError: No Maven, and the jars are not cached yet.
    """
    built = _jvm.build(PEER)
    return StreamsApp(built.java, built.classpath)
