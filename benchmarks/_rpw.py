"""Read-process-write cases: the SDK Processor, a hand-written loop, and Quix Streams.

The SDK Processor per guarantee, an optimal hand-written confluent-kafka transactional loop,
and Quix Streams with processing_guarantee=exactly-once.

Each copies N records from a pre-filled 4-partition topic to a fresh one with a 100 ms commit
interval; the clock starts at the first record and stops once the last transaction committed.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer

from benchmarks import _harness
from benchmarks._harness import Result, progress, topic
from sdk.aio import AsyncProcessor
from sdk.processor import Processor, Progress
from sdk.profiles import ProcessingProfile

GROUP = "read-process-write"
HERE = Path(__file__).resolve().parent
QUIX_VENV = HERE / ".venvs" / "quix"
QUIX_VERSION = "3.28.1"


INTERVAL_ONLY = 2**31 - 1
"""``max_records_per_transaction`` for the SDK cases: commit on the 100 ms interval alone, as the
hand-written loop and Quix Streams (``commit_every=0``) do. The profile's default also commits
every 10,000 input records; at 100 B that is ~3x as many transactions as the interval gives
(measured: 21 instead of 6 for 200,000 records), so the ``default cap`` case shows what it costs."""


def processing_profile(
    bootstrap: str, guarantee: str, *, default_cap: bool = False, commit_interval_ms: int = 100
) -> ProcessingProfile:
    """The profile of a Processor case: a fresh group, ``INTERVAL_ONLY`` unless ``default_cap``."""
    group = f"bench-{uuid.uuid4().hex[:8]}"
    producer: dict[str, Any] = {"guarantee": guarantee, "bootstrap_servers": bootstrap}
    if guarantee == "exactly_once":
        producer["transactional_id_prefix"] = f"{group}-"
    cap = {} if default_cap else {"max_records_per_transaction": INTERVAL_ONLY}
    return ProcessingProfile.model_validate(
        {
            "guarantee": guarantee,
            "consumer": {
                "guarantee": guarantee,
                "bootstrap_servers": bootstrap,
                "group_id": group,
                **_harness.sdk_consumer_fields(),
            },
            "producer": producer,
            "commit_interval_ms": commit_interval_ms,
            **cap,
        }
    )


def processor(
    bootstrap: str,
    source: str,
    n: int,
    size: int,
    guarantee: str,
    *,
    front: str = "sync",
    default_cap: bool = False,
) -> Result:
    """The SDK Processor copying ``source`` under ``guarantee``.

    ``front="async"``: the same copy through ``sdk.aio.AsyncProcessor`` with an async handler.
    ``default_cap``: keep the profile's default ``max_records_per_transaction`` (see
    :data:`INTERVAL_ONLY`).
    """
    out = topic(bootstrap)
    profile = processing_profile(bootstrap, guarantee, default_cap=default_cap)
    first = 0.0
    seen = 0
    proc: Processor | AsyncProcessor

    def copy(record: Any) -> list[tuple[str, Any, Any]]:
        nonlocal first, seen
        if not first:
            first = time.perf_counter()
        seen += 1
        if seen >= n:
            proc.stop()
        return [(out, record.value, record.key)]  # the peer's tuple (a Processor output too)

    committed_at = 0.0

    def on_progress(event: Progress) -> None:
        nonlocal committed_at
        if event.event == "committed":
            committed_at = time.perf_counter()

    # the clock stops at the final commit: run() then closes both clients (leaving the group),
    # which the hand-written loop's clock does not count either
    if front == "async":

        async def async_copy(record: Any) -> list[tuple[str, Any, Any]]:
            # copy's work, not a call of it: the twins' handlers do the same per record (a
            # call more per record is ~30 ns the sync case does not pay), as in _aio.py
            nonlocal first, seen
            if not first:
                first = time.perf_counter()
            seen += 1
            if seen >= n:
                proc.stop()
            return [(out, record.value, record.key)]

        proc = AsyncProcessor(profile, [source], instance_id="bench", on_progress=on_progress)
        asyncio.run(proc.run(async_copy))
    else:
        proc = Processor(profile, [source], instance_id="bench", on_progress=on_progress)
        proc.run(copy)
    seconds = (committed_at or time.perf_counter()) - first
    return Result(
        GROUP,
        f"SDK {'AsyncProcessor' if front == 'async' else 'Processor'} {guarantee}"
        + (" (default record cap)" if default_cap else ""),
        size,
        seen,
        seconds,
        extra={"transactions": proc.stats.commits},
    )


def hand_written(
    bootstrap: str, source: str, n: int, size: int, *, with_handler: bool = False
) -> Result:
    """The optimal plain confluent-kafka exactly-once loop (batch consume, 100 ms txns).

    ``with_handler``: each record goes through a per-record handler returning what to
    produce, as the Processor's handler does (the issue's comparison: same commit interval,
    same per-record handler); without it the loop produces each record directly.
    """
    out = topic(bootstrap)
    consumer, producer = eos_clients(bootstrap)
    consumer.subscribe([source])
    seen, first, txns = eos_loop(
        consumer, producer, out, until=lambda seen: seen >= n, with_handler=with_handler
    )
    seconds = time.perf_counter() - first
    consumer.close()
    return Result(
        GROUP,
        "hand-written confluent-kafka EOS loop" + (" (handler)" if with_handler else ""),
        size,
        seen,
        seconds,
        extra={"transactions": txns},
    )


def eos_clients(bootstrap: str) -> tuple[Any, Any]:
    """The hand-written loop's clients: a consumer (not subscribed yet) and a producer.

    The consumer reads committed records in a fresh group; the producer's transactions are
    initialised.
    """
    group = f"bench-{uuid.uuid4().hex[:8]}"
    consumer = Consumer(
        _harness.raw_consumer_config(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "isolation.level": "read_committed",
            }
        )
    )
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"{group}-0",
            "linger.ms": 5,
            "partitioner": "murmur2_random",
        }
    )
    producer.init_transactions(60)
    return consumer, producer


def eos_loop(
    consumer: Any,
    producer: Any,
    out: str,
    *,
    until: Callable[[int], bool],
    interval_s: float = 0.1,
    with_handler: bool = False,
) -> tuple[int, float, int]:
    """Copy to ``out`` in transactions of ``interval_s`` until ``until(records seen)``.

    Returns:
        (records seen, perf_counter time of the first record, transactions committed).
    """

    def handle(m: Any) -> list[tuple[str, bytes | None, bytes | None]]:
        return [(out, m.value(), m.key())]

    seen, first, began, txns = 0, 0.0, 0.0, 0
    while not until(seen):
        msgs = consumer.consume(1000, 0.1)
        if msgs and not first:
            first = time.perf_counter()
        for m in msgs:
            if m.error() is not None:
                continue
            if not began:
                producer.begin_transaction()
                began = time.perf_counter()
            # a full local queue (a broker still warming up): serve it, then retry, as the raw
            # producer loop does (inline: no extra call per record)
            if with_handler:
                for topic_, value, key in handle(m):
                    while True:
                        try:
                            producer.produce(topic_, value, key)
                            break
                        except BufferError:
                            producer.poll(0.01)
            else:
                while True:
                    try:
                        producer.produce(out, m.value(), m.key())
                        break
                    except BufferError:
                        producer.poll(0.01)
            seen += 1
        if began and (time.perf_counter() - began >= interval_s or until(seen)):
            producer.send_offsets_to_transaction(
                consumer.position(consumer.assignment()), consumer.consumer_group_metadata()
            )
            producer.commit_transaction(60)
            txns += 1
            began = 0.0
    return seen, first, txns


def _quix_python() -> str | None:
    """Python of a separate venv with Quix Streams (it pins an older confluent-kafka)."""
    py = QUIX_VENV / "bin" / "python"
    if py.exists():
        return str(py)
    progress(f"creating {QUIX_VENV} with quixstreams=={QUIX_VERSION} (first run only)")
    try:
        subprocess.run([sys.executable, "-m", "venv", str(QUIX_VENV)], check=True)
        subprocess.run(
            [str(py), "-m", "pip", "install", "-q", f"quixstreams=={QUIX_VERSION}"],
            check=True,
            timeout=900,
        )
    except (subprocess.SubprocessError, OSError) as exc:
        progress(f"Quix Streams unavailable: {exc}")
        return None
    return str(py)


def quix(bootstrap: str, source: str, n: int, size: int) -> Result | None:
    """Quix Streams ``Application(processing_guarantee="exactly-once", commit_interval=0.1)``."""
    py = _quix_python()
    if py is None:
        return None
    out = topic(bootstrap)
    spec = {
        "bootstrap": bootstrap,
        "source": source,
        "output": out,
        "n": n,
        "group": f"bench-{uuid.uuid4().hex[:8]}",
        "fetch_backoff_ms": _harness.FETCH_BACKOFF_MS,
    }
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [py, str(HERE / "_quix_app.py"), json.dumps(spec)],
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
        check=False,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"Quix app failed: {proc.stderr[-2000:]}")
    data = json.loads(lines[-1])
    return Result(
        GROUP,
        f"Quix Streams {data['version']} exactly-once",
        size,
        data["records"],
        data["seconds"],
    )
