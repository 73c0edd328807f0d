"""Benchmark (issue #50): records/s of a slow handler run N at a time, in key order.

One topic of 4 partitions holds ``--records`` records over 10,000 keys (``k00000`` ...
``k09999`` round robin; the value is the record's 8-byte sequence number). For each
concurrency N, three rows side by side:

* ``ideal``: min(N, records the ordering lets run at once) / the handler's sleep. In key
  order that is the distinct keys (every record of the default run has its own key); in
  partition order the partitions; unordered, N;
* ``SDK``: ``sdk.consumer.Consumer.run(handler, concurrency=N, ordering=...)``, at_least_once,
  a handler that sleeps ``--sleep-ms`` (an I/O stand-in);
* ``Parallel Consumer``: Confluent's Parallel Consumer (a JVM app, ``benchmarks/parallel``)
  with ``maxConcurrency=N``, the same ordering and the same sleep, on the same broker.

Each case is a fresh consumer group reading the topic from the start. Its rate is measured
from the start of the first handler call to the end of the one that handled the last record;
its CPU per record is the consumer process's CPU over that same window (every thread). Medians
over ``--runs``; within a run the two clients go back to back, in alternating order.
``--sleep-ms 0`` (a no-op handler) makes the CPU columns the client's own cost per record.
Usage::

    .venv/bin/python -m benchmarks.concurrency            # starts a 1-node local cluster
    .venv/bin/python -m benchmarks.concurrency --bootstrap 127.0.0.1:9092 --runs 1 --no-peer
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import struct
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from benchmarks import _parallel
from benchmarks._harness import broker, fill, progress, topic
from sdk.consumer import Consumer, ConsumerRecord
from sdk.profiles import ConsumerProfile, Guarantee
from sdk.testing.admin import delete_topic

PARTITIONS = 4
KEYS = 10_000
SDK_MISSING = "not available on this checkout"
PEER = f"Parallel Consumer {_parallel.PC_VERSION}"


@dataclass(frozen=True)
class Sample:
    """One case's measurement."""

    records: int
    seconds: float
    cpu_seconds: float

    @property
    def rate(self) -> float:
        """Records per second."""
        return self.records / self.seconds if self.seconds > 0 else 0.0

    @property
    def cpu_us(self) -> float:
        """µs of CPU per record."""
        return self.cpu_seconds / self.records * 1e6 if self.records else 0.0


def records_for(count: int) -> list[tuple[bytes, bytes]]:
    """``count`` (key, value) pairs: keys round robin over ``KEYS``, values the sequence."""
    return [(b"k%05d" % (i % KEYS), struct.pack(">Q", i)) for i in range(count)]


def ideal_rate(concurrency: int, ordering: str, records: int, sleep_ms: int) -> float | None:
    """Records/s if N handlers were always busy, capped by what the ordering allows at once.

    None for a no-op handler (``sleep_ms`` 0): nothing bounds it but the client.
    """
    if sleep_ms <= 0:
        return None
    room = {"key": min(records, KEYS), "partition": PARTITIONS, "unordered": concurrency}
    return min(concurrency, room[ordering]) / (sleep_ms / 1000)


def sdk_supports_concurrency() -> bool:
    """Whether this checkout's ``Consumer.run`` takes ``concurrency`` and ``ordering``.

    Binding the call's arguments to the signature raises the TypeError the call would,
    without a consumer or a broker.
    """
    try:
        inspect.signature(Consumer.run).bind(
            None, print, concurrency=1, ordering="key", max_records=1
        )
    except TypeError:
        return False
    return True


class _Window:
    """Wall and CPU clocks at the first handler call and at the handling of the last record.

    Handlers run on several threads at once: the stamps are taken under a lock, which costs
    less than a microsecond against the record's handling.
    """

    def __init__(self, target: int) -> None:
        self.target = target
        self.handled = 0
        self.first: tuple[float, float] | None = None
        self.last: tuple[float, float] | None = None
        self._lock = threading.Lock()

    def started(self) -> None:
        if self.first is None:
            with self._lock:
                if self.first is None:
                    self.first = (time.perf_counter(), time.process_time())

    def finished(self) -> None:
        with self._lock:
            self.handled += 1
            if self.handled == self.target:
                self.last = (time.perf_counter(), time.process_time())


def run_sdk(
    bootstrap: str, name: str, concurrency: int, ordering: str, sleep_ms: int, records: int
) -> Sample:
    """One SDK case: a fresh group reads ``records`` records with N handlers at once.

    Raises:
        RuntimeError: The run returned before every record was handled.
    """
    window = _Window(records)
    pause = sleep_ms / 1000

    def handler(record: ConsumerRecord) -> None:
        window.started()
        if pause:
            time.sleep(pause)
        window.finished()

    profile = ConsumerProfile(
        guarantee=Guarantee.AT_LEAST_ONCE,
        bootstrap_servers=bootstrap,
        group_id=f"bench-sdk-{uuid.uuid4().hex[:10]}",
        auto_offset_reset="earliest",
    )
    with Consumer(profile, [name]) as consumer:
        # typed loosely: concurrency= is not in Consumer.run on every checkout (main() checks)
        run = cast("Callable[..., Any]", consumer.run)
        run(
            handler,
            concurrency=concurrency,
            ordering=ordering,
            max_records=records,
            idle_timeout_s=60,
        )
    if window.first is None or window.last is None:
        raise RuntimeError(
            f"SDK, concurrency {concurrency}: {window.handled} of {records} records handled"
        )
    return Sample(
        records,
        window.last[0] - window.first[0],
        window.last[1] - window.first[1],
    )


def run_peer(
    bootstrap: str, name: str, concurrency: int, ordering: str, sleep_ms: int, records: int
) -> Sample:
    """One Parallel Consumer case (a fresh group, a fresh JVM)."""
    out = _parallel.run_parallel_consumer(
        bootstrap,
        name,
        f"bench-pc-{uuid.uuid4().hex[:10]}",
        concurrency,
        ordering,
        sleep_ms,
        records,
    )
    if int(out["records"]) < records:
        raise RuntimeError(f"{PEER}: {out['records']} of {records} records handled")
    return Sample(int(out["records"]), float(out["seconds"]), float(out["window_cpu_seconds"]))


def _cell(value: float | None, fmt: str = "{:,.0f}") -> str:
    return "—" if value is None else fmt.format(value)


def _ratio(top: float | None, bottom: float | None) -> str:
    return "—" if top is None or not bottom else f"{top / bottom:.2f}"


def table(
    args: argparse.Namespace,
    samples: dict[tuple[str, int], list[Sample]],
    levels: list[int],
    sdk_note: str | None,
) -> str:
    """The Markdown table of medians (``sdk_note``: what the SDK cells say when not run)."""

    def median(case: str, n: int, metric: str) -> float | None:
        values = [getattr(s, metric) for s in samples.get((case, n), [])]
        return statistics.median(values) if values else None

    peer_note = None if args.peer else "not run (--no-peer)"
    lines = [
        f"{args.records:,} records over {min(args.records, KEYS):,} distinct keys, "
        f"{PARTITIONS} partitions, handler sleep {args.sleep_ms} ms, ordering {args.ordering}, "
        f"medians of {args.runs} run(s). Rate: first handler call to the last record handled; "
        "CPU: the client process over that window, per record.",
        "",
        "| N | ideal rec/s | SDK rec/s | SDK/ideal | Parallel Consumer rec/s | PC/ideal "
        "| SDK/PC | SDK CPU µs/rec | PC CPU µs/rec |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for n in levels:
        ideal = ideal_rate(n, args.ordering, args.records, args.sleep_ms)
        sdk, pc = median("sdk", n, "rate"), median("peer", n, "rate")
        sdk_cpu, pc_cpu = median("sdk", n, "cpu_us"), median("peer", n, "cpu_us")
        sdk_cells = [sdk_note] * 2 if sdk_note else [_cell(sdk), _ratio(sdk, ideal)]
        pc_cells = [peer_note] * 2 if peer_note else [_cell(pc), _ratio(pc, ideal)]
        lines.append(
            f"| {n} | {_cell(ideal)} | {' | '.join(sdk_cells)} | {' | '.join(pc_cells)} "
            f"| {_ratio(sdk, pc)} | {sdk_note or _cell(sdk_cpu, '{:,.1f}')} "
            f"| {peer_note or _cell(pc_cpu, '{:,.1f}')} |"
        )
    return "\n".join(lines)


def run(bootstrap: str, args: argparse.Namespace) -> str:
    """Fill the topic, run every case ``args.runs`` times, return the table."""
    levels = [int(x) for x in args.concurrency.split(",")]
    sdk_note = None if args.sdk else "not run (--no-sdk)"
    if args.sdk and not sdk_supports_concurrency():
        sdk_note = SDK_MISSING
        progress(f"SDK: Consumer.run takes no concurrency= here: its rows say {SDK_MISSING!r}")
    cases: list[tuple[str, Callable[..., Sample]]] = []
    if args.peer:
        _parallel.build()  # Maven and javac, once, before any clock
        cases.append(("peer", run_peer))
    if sdk_note is None:
        cases.append(("sdk", run_sdk))
    name = topic(bootstrap, PARTITIONS)
    progress(f"writing {args.records:,} records to {name} ...")
    fill(bootstrap, name, records_for(args.records))
    samples: dict[tuple[str, int], list[Sample]] = {}
    try:
        for r in range(args.runs):
            for i, n in enumerate(levels):
                # alternate which client goes first, across runs and across levels
                order = cases if (r + i) % 2 == 0 else cases[::-1]
                for case, fn in order:
                    progress(f"run {r + 1}/{args.runs} N={n} {case} ...")
                    s = fn(bootstrap, name, n, args.ordering, args.sleep_ms, args.records)
                    samples.setdefault((case, n), []).append(s)
                    progress(
                        f"run {r + 1}/{args.runs} N={n} {case}: {s.rate:,.1f} rec/s, "
                        f"{s.cpu_us:,.1f} µs CPU/rec ({s.records} in {s.seconds:.2f} s)"
                    )
    finally:
        delete_topic(bootstrap, name)
    return table(args, samples, levels, sdk_note)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, start a cluster if none was given, print the table.

    Args:
        argv: Command-line arguments (default ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--bootstrap", help="existing broker (default: start a local one)")
    parser.add_argument("--records", type=int, default=4000)
    parser.add_argument("--sleep-ms", type=int, default=20, help="handler sleep (0: no-op)")
    parser.add_argument("--concurrency", default="1,16,64,256", help="comma-separated N")
    parser.add_argument("--ordering", choices=("key", "partition", "unordered"), default="key")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--peer", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--sdk", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args(argv)
    if args.records < 1 or args.runs < 1 or args.sleep_ms < 0:
        parser.error("--records and --runs must be >= 1, --sleep-ms >= 0")
    with broker(args.bootstrap) as bootstrap:
        out = run(bootstrap, args)
    print()
    print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
