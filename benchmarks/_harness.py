"""Shared plumbing of the peer benchmarks: broker, topics, results, medians, progress."""

from __future__ import annotations

import contextlib
import os
import resource
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator, Sequence, Set
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Producer

from sdk.testing.admin import create_topic
from sdk.testing.jars import resolve_broker_jars
from sdk.testing.tools import find_java


@dataclass
class Result:
    """One measurement of one case."""

    group: str
    case: str
    size: int
    records: int
    seconds: float
    p50_ms: float | None = None
    p99_ms: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


FETCH_BACKOFF_MS = 10
"""``--fetch-backoff-ms``: fetch.queue.backoff.ms of every consumer, the SDK's and the peers'.

librdkafka's default (1000 ms) pauses a consumer whose local queue is over the prefetch
threshold for a second: a loop that drains it fast then waits idle, by chance. The SDK's
profiles use 10 ms; the peers get the same, so that a ratio compares the loops, not the setting.
"""


def raw_consumer_config(config: dict[str, Any]) -> dict[str, Any]:
    """A peer's librdkafka consumer config with ``FETCH_BACKOFF_MS``."""
    return {**config, "fetch.queue.backoff.ms": FETCH_BACKOFF_MS}


def sdk_consumer_fields() -> dict[str, Any]:
    """ConsumerProfile fields with ``FETCH_BACKOFF_MS``."""
    return {"fetch_queue_backoff_ms": FETCH_BACKOFF_MS}


def progress(text: str) -> None:
    """Print a progress line at once (long runs must show they are alive)."""
    print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def broker(bootstrap: str | None) -> Iterator[str]:
    """Yield bootstrap servers: the given cluster or an embedded 1-node one."""
    if bootstrap:
        yield bootstrap
        return
    from sdk.testing.cluster import LocalCluster

    with LocalCluster(nodes=1, heap="1g") as cluster:
        yield cluster.bootstrap_servers


def topic(bootstrap: str, partitions: int = 4, prefix: str = "bench") -> str:
    """Create a fresh topic."""
    return create_topic(bootstrap, f"{prefix}-{uuid.uuid4().hex[:10]}", partitions)


def bench_topics(bootstrap: str, admin: Any = None) -> set[str]:
    """The names of every topic :func:`topic` made on this cluster (``bench-*``), in any process."""
    from confluent_kafka.admin import AdminClient

    admin = admin or AdminClient({"bootstrap.servers": bootstrap})
    return {t for t in admin.list_topics(timeout=30).topics if t.startswith("bench-")}


def drop_topics(bootstrap: str, keep: Set[str] = frozenset()) -> None:
    """Delete every benchmark topic but ``keep``, once a case is done with them.

    Each case writes a topic of its own (1 GB per producer case at 1 KB), in this process or
    in a child. Kept until the broker stopped, a 5-repetition run filled the machine's 77 GB
    free disk at 1 KB, and the broker, then every command on the machine, failed. (One
    ``delete_topics`` call for them all, not ``sdk.testing.admin.delete_topic`` per topic.)
    """
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    names = sorted(bench_topics(bootstrap, admin) - keep)
    if not names:
        return
    for name, future in admin.delete_topics(names, operation_timeout=60).items():
        try:
            future.result(60)
        except Exception as exc:  # a topic left behind costs disk, not the measurement
            progress(f"    could not delete topic {name}: {exc}")


Payloads = tuple[tuple[bytes, bytes], ...]
"""The records a case sends: (key, value) pairs, in a tuple the garbage collector skips."""


def payloads(n: int, size: int) -> Payloads:
    """``n`` (key, value) pairs: 1,000 distinct keys, values of exactly ``size`` bytes.

    A tuple, not a list: a tuple holding only bytes pairs is untracked by the garbage
    collector, which a list never is. Measured: with the 1,000,000-pair list alive, each full
    collection took 32 ms against 5.7 ms without it (it walks every entry), so a case whose
    objects live long enough to set off full collections (``send()``'s delivery handles in
    flight) paid for the harness's input, 0.35 µs per record of the 0.45 µs the collector
    took in all; with the tuple, 0.11 of 0.24. The loops read it as they read the list.
    """
    pad = b"x" * size
    return tuple([(b"k%d" % (i % 1000), (b"%d|" % i + pad)[:size]) for i in range(n)])


def fill(bootstrap: str, name: str, records: Sequence[tuple[bytes, bytes]]) -> None:
    """Write ``records`` to ``name`` fast (raw idempotent producer)."""
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 20,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_097_151,
        }
    )
    for key, value in records:
        while True:
            try:
                p.produce(name, value, key)
                break
            except BufferError:
                p.poll(0.05)
    if p.flush(120):
        raise RuntimeError("could not fill the benchmark topic")


def percentiles(samples: list[float]) -> tuple[float | None, float | None]:
    """(p50, p99) of latency samples in ms."""
    if not samples:
        return None, None
    ordered = sorted(samples)
    return ordered[len(ordered) // 2], ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def java_tool(main_class: str, *args: str, timeout: float = 600.0) -> str:
    """Run a Kafka tool class from the Maven-resolved broker jars; return its stdout."""
    jars = resolve_broker_jars()
    cmd = [
        find_java(),
        "-Xmx1g",
        f"-Dlog4j2.configurationFile={jars.log4j_config}",
        "-cp",
        jars.classpath,
        main_class,
        *args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{main_class} failed: {proc.stderr[-2000:]}")
    return proc.stdout


def median_results(results: list[Result]) -> list[Result]:
    """Collapse repetitions: one row per (group, case, size) with median rate and latencies."""
    keyed: dict[tuple[str, str, int], list[Result]] = {}
    for r in results:
        keyed.setdefault((r.group, r.case, r.size), []).append(r)
    out = []
    for (group, case, size), rs in keyed.items():
        rate = statistics.median(r.rate for r in rs)
        cpu = {
            key: statistics.median(values)
            for key in CPU_KEYS
            if (values := [r.extra[key] for r in rs if key in r.extra])
        }
        p50 = [r.p50_ms for r in rs if r.p50_ms is not None]
        p99 = [r.p99_ms for r in rs if r.p99_ms is not None]
        out.append(
            Result(
                group,
                case,
                size,
                records=int(rate * 1000),
                seconds=1000.0,
                p50_ms=statistics.median(p50) if p50 else None,
                p99_ms=statistics.median(p99) if p99 else None,
                extra={"runs": len(rs), "rates": [round(r.rate) for r in rs], **cpu},
            )
        )
    return out


@dataclass(frozen=True)
class CpuMark:
    """CPU seconds spent so far: by this process and its reaped children, and by the machine."""

    client: float
    machine: float | None


def cpu_mark() -> CpuMark:
    """Read both CPU clocks now (``machine`` is None off Linux).

    ``client``: user + system time of this process (every thread: librdkafka's too) and of its
    children that have ended (a case run in a subprocess: Quix Streams, Kafka's perf tools,
    queue workers). ``machine``: every core's busy time from /proc/stat (user, nice, system,
    irq, softirq): the client, the broker and anything else running. Steal and idle are not
    busy: a hypervisor taking the cores is not work of the case.
    """
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    client = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
    try:
        with open("/proc/stat") as stat:
            fields = stat.readline().split()
    except OSError:
        return CpuMark(client, None)
    user, nice, system, _idle, _iowait, irq, softirq = (int(x) for x in fields[1:8])
    return CpuMark(client, (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK"))


def cpu_per_record(before: CpuMark, after: CpuMark, records: int) -> dict[str, float]:
    """µs of client and machine CPU per record between two marks (``extra`` keys of a Result).

    The marks are taken around a whole case, so its set-up and tear-down outside the case's
    clock (client start, group join, close) count too: the same kind of work for ours and the
    peer, a few tens of ms against seconds of records.
    """
    if records <= 0:
        return {}
    out = {"client_cpu_us": (after.client - before.client) / records * 1e6}
    if before.machine is not None and after.machine is not None:
        out["machine_cpu_us"] = (after.machine - before.machine) / records * 1e6
    return out


CPU_KEYS = ("client_cpu_us", "machine_cpu_us")


def dirty_mb() -> float | None:
    """The kernel's dirty page cache in MB (``Dirty:`` of /proc/meminfo), None off Linux."""
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("Dirty:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def in_fresh_process(fn: Callable[..., Result | None], *args: Any, **kwargs: Any) -> Result | None:
    """Run the case ``fn(*args, **kwargs)`` in a new interpreter with the run's settings.

    Measured: in the runner's one long-lived process, a case paid for the ones before it. A
    closed ``Processor`` or ``AsyncProcessor`` is garbage in reference cycles until a full
    collection, which the next case's loop then runs (the producer cases' own figures:
    :func:`benchmarks._producers.in_fresh_process`). A fresh interpreter per case gives every
    case, ours and the peer's, the same starting state.

    ``fn`` counts the CPU it needs counted (:func:`with_own_cpu`, called in the child): the
    interpreter's start-up and the imports of the case's module are no work of the case
    (measured: 0.39-0.43 s of CPU, 0.4 µs per record of a 1,000,000-record case).
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=1, mp_context=ctx, initializer=_child_settings, initargs=(FETCH_BACKOFF_MS,)
    ) as pool:
        return pool.submit(fn, *args, **kwargs).result()


def _child_settings(fetch_backoff_ms: int) -> None:
    """The run's settings in a child process (``spawn`` starts from the module defaults)."""
    global FETCH_BACKOFF_MS
    FETCH_BACKOFF_MS = fetch_backoff_ms


def with_own_cpu(fn: Callable[..., Result | None], *args: Any, **kwargs: Any) -> Result | None:
    """``fn(*args, **kwargs)``, with the CPU per record spent in it (unless it timed its own)."""
    before = cpu_mark()
    result = fn(*args, **kwargs)
    after = cpu_mark()
    if result is not None:
        for key, value in cpu_per_record(before, after, result.records).items():
            result.extra.setdefault(key, value)
    return result


def settle(limit_mb: float = 64.0, timeout: float = 30.0) -> None:
    """Write the page cache back to disk before a timed case, so no case pays for another's.

    Measured (1 KB records, 1,000,000 per case): the broker's log writes left ~2 GB of dirty
    pages, the kernel's background-writeback threshold on this machine, and from then on every
    case ran while the kernel wrote back what the cases before it had written. Which case paid
    depended on the case order: the rotating order always ran ``SDK alo send`` right after the
    raw producer's 1 GB, while the raw producer itself came after reading cases or the warm-up.
    Starting every case from a clean page cache makes the order irrelevant to it.
    """
    os.sync()
    deadline = time.monotonic() + timeout
    while (mb := dirty_mb()) is not None and mb > limit_mb and time.monotonic() < deadline:
        time.sleep(0.1)


def timed(fn: Callable[[], int]) -> tuple[int, float]:
    """Run ``fn`` (returns records handled); return (records, seconds)."""
    start = time.perf_counter()
    n = fn()
    return n, time.perf_counter() - start


def generated_by(argv: list[str]) -> str:
    """The head of a generated docs section: the command that made it, and when."""
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return f"Generated by `{' '.join(['python -m benchmarks.run', *argv])}` on {when}"
