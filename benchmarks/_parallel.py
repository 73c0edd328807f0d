"""The Confluent Parallel Consumer peer of the concurrency benchmark (issue #50).

``parallel/ParallelApp.java`` consumes a topic with Confluent's Parallel Consumer, a handler
that sleeps per record, and prints one JSON line when it has handled the records asked for.
Its jars are resolved by Maven and the app compiled by javac into the project's cache on
first use, as the Kafka Streams peer's are (:mod:`benchmarks._jvm`).
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from benchmarks import _jvm
from sdk.testing.errors import JavaNotFoundError, MavenError

PC_VERSION = "0.5.3.3"
HERE = Path(__file__).resolve().parent / "parallel"
PEER = _jvm.PeerSource(
    label=f"Confluent Parallel Consumer {PC_VERSION}",
    pom=HERE / "pom.xml",
    source=HERE / "ParallelApp.java",
    cache_name=f"parallel-consumer-{PC_VERSION}",
    jar_glob="parallel-consumer-core-*.jar",
    properties={"pc.version": PC_VERSION},
)
ORDERINGS = ("KEY", "PARTITION", "UNORDERED")


def build() -> _jvm.BuiltPeer:
    """Resolve the jars and compile the app once.

    Raises:
        RuntimeError: No Java 17+, no javac, no Maven (and nothing cached), or Maven or javac
            failed; the message says which and what to install.
    """
    try:
        return _jvm.build(PEER)
    except (JavaNotFoundError, MavenError) as exc:
        # The harness's errors name the fix; a RuntimeError says which peer needed it.
        raise RuntimeError(f"the {PEER.label} peer cannot be built: {exc}") from exc


def command(
    app: _jvm.BuiltPeer,
    bootstrap: str,
    topic: str,
    group: str,
    concurrency: int,
    ordering: str,
    sleep_ms: int,
    records: int,
    idle_timeout_s: int = 60,
) -> list[str]:
    """The command line of one ParallelApp process (it fails after ``idle_timeout_s`` idle)."""
    return [
        app.java,
        "-Xmx512m",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        f"-Didle.timeout.s={idle_timeout_s}",
        "-cp",
        app.classpath,
        "ParallelApp",
        bootstrap,
        topic,
        group,
        str(concurrency),
        ordering,
        str(sleep_ms),
        str(records),
    ]


def run_parallel_consumer(
    bootstrap: str,
    topic: str,
    group: str,
    concurrency: int,
    ordering: str,
    sleep_ms: int,
    records: int,
    *,
    idle_timeout_s: int = 60,
    timeout_s: float | None = None,
) -> dict[str, Any]:
    """Consume ``records`` records of ``topic`` with the Parallel Consumer; return its result.

    Args:
        bootstrap: The broker.
        topic: A topic holding at least ``records`` records.
        group: The consumer group (a fresh one reads from the start: ``earliest``).
        concurrency: ``maxConcurrency``: the most records handled at once.
        ordering: ``KEY``, ``PARTITION`` or ``UNORDERED`` (any case).
        sleep_ms: What the handler sleeps per record (0: a no-op handler).
        records: Handler calls to count before the app exits.
        idle_timeout_s: The app gives up (exit 1) when no record was handled for this long:
            an unreachable broker or a missing topic is no error to a Kafka consumer.
        timeout_s: Kill the app after this long (default: four times the time the records
            take one at a time, plus two minutes for the JVM and the group join).

    Returns:
        The app's JSON line (``records``, ``seconds`` from the first handler call to the end
        of the last, ``cpu_seconds`` of the whole JVM, ``window_cpu_seconds`` over the same
        window as ``seconds``, ``concurrency``, ``ordering``) plus ``wall_seconds``: the
        process from start to exit, as this side saw it.

    Raises:
        RuntimeError: The peer cannot be built, failed, timed out or printed no result.
        ValueError: An unknown ordering.
    """
    order = ordering.upper()
    if order not in ORDERINGS:
        raise ValueError(f"ordering: one of {', '.join(ORDERINGS)}, not {ordering!r}")
    app = build()
    cmd = command(
        app, bootstrap, topic, group, concurrency, order, sleep_ms, records, idle_timeout_s
    )
    limit = timeout_s if timeout_s is not None else 120.0 + 4 * records * sleep_ms / 1000
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, check=False)
    except subprocess.TimeoutExpired as exc:
        # on POSIX what was read before the kill comes back undecoded
        raw = exc.stderr or b""
        err = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
        raise RuntimeError(
            f"the Parallel Consumer peer did not finish {records} records in {limit:.0f} s "
            f"(topic {topic}, concurrency {concurrency}):\n{err[-2000:]}"
        ) from exc
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        # the app's own verdict first: the client's warnings go on after it until the exit
        said = [line for line in proc.stderr.splitlines() if line.startswith("ParallelApp")]
        raise RuntimeError(
            f"the Parallel Consumer peer exited {proc.returncode}: "
            f"{' '.join(said) or 'no message'}\n--- its stderr, last lines:\n"
            f"{proc.stderr[-2000:]}"
        )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if not lines:
        raise RuntimeError(
            f"the Parallel Consumer peer printed no result:\n{proc.stdout[-1000:]}\n"
            f"{proc.stderr[-2000:]}"
        )
    result: dict[str, Any] = json.loads(lines[-1])
    result["wall_seconds"] = wall
    return result
