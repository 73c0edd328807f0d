"""End-to-end latency across commit intervals: ``python -m benchmarks.run --only latency``.

For each pipeline, commit interval and offered rate, on one local broker: a paced
confluent-kafka producer writes stamped 100 B records (:mod:`benchmarks._latency_worker`) to
a fresh 4-partition topic; the pipeline under test copies them, unchanged, to another; a
reader (read_committed; read_uncommitted for at_least_once pipelines, the floor) takes, for
each output record, its arrival clock minus its stamp. The first ``--latency-warmup`` seconds
of each case are discarded; the next ``--latency-duration`` seconds are measured: p50, p99,
p99.9 and max latency of the records sent in them, the output records/s that arrived in them,
and the pipeline process's CPU time in them per output record (``/proc/<pid>/stat``: every
thread, the JVM's compiler and GC too).

The two offered rates: ``--light-rate`` and :data:`HIGH_SHARE` of each pipeline's saturation,
measured once at a 100 ms interval by copying a pre-filled topic (``--rate`` fixes it instead).
Each repetition runs every case, the pipelines of one (rate, interval) back to back in an
order that rotates; the tables give the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import selectors
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from benchmarks import _streams
from benchmarks._harness import broker, drop_topics, progress, settle, topic

DOCS = Path(__file__).resolve().parents[1] / "docs"
ROOT = DOCS.parent
BEGIN, END = "<!-- LATENCY:BEGIN -->", "<!-- LATENCY:END -->"
PARTITIONS = 4
HIGH_SHARE = 0.7
SATURATION_INTERVAL_MS = 100
QUICK = (
    ("latency_duration", 20.0, 5.0),
    ("latency_warmup", 5.0, 2.0),
    ("latency_intervals", "10,50,100,500,1000", "100,1000"),
    ("saturation_records", 1_000_000, 200_000),
)
"""``--quick``: (option, its default, what quick makes of it); run.py's --quick sets 1 run."""
METRICS = ("p50_ms", "p99_ms", "p999_ms", "max_ms", "rate", "cpu_us")


@dataclass(frozen=True)
class Pipeline:
    """One pipeline under test: its name on the page, its short name, how it runs."""

    label: str
    name: str
    kind: str
    """A pipeline kind of the worker, or ``streams``."""
    guarantee: str

    @property
    def isolation(self) -> str:
        """The reader's isolation: an at_least_once pipeline's output is visible at once."""
        return "read_committed" if self.guarantee == "exactly_once" else "read_uncommitted"


PIPELINES = (
    Pipeline("SDK Processor exactly_once", "eos", "processor-eos", "exactly_once"),
    Pipeline(
        "SDK Processor exactly_once (default record cap)",
        "eos-defaults",
        "processor-eos-defaults",
        "exactly_once",
    ),
    Pipeline("SDK Processor at_least_once", "alo", "processor-alo", "at_least_once"),
    Pipeline(
        "hand-written confluent-kafka EOS loop", "hand-written", "hand-written", "exactly_once"
    ),
    Pipeline(
        f"Kafka Streams {_streams.STREAMS_VERSION} exactly_once_v2",
        "streams",
        "streams",
        "exactly_once",
    ),
    Pipeline(
        f"Kafka Streams {_streams.STREAMS_VERSION} at_least_once",
        "streams-alo",
        "streams",
        "at_least_once",
    ),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The latency group's options (``--runs``, ``--quick``, ``--no-docs`` are run.py's)."""
    group = parser.add_argument_group("latency (--only latency)")
    group.add_argument("--latency-intervals", default="10,50,100,500,1000", help="commit ms")
    group.add_argument("--latency-duration", type=float, default=20.0, help="measured s per case")
    group.add_argument("--latency-warmup", type=float, default=5.0, help="discarded s per case")
    group.add_argument("--latency-size", type=int, default=100, help="record bytes (>= 16)")
    group.add_argument("--light-rate", type=int, default=1_000, help="records/s")
    group.add_argument("--rate", type=int, help="the high rate for every pipeline (records/s)")
    group.add_argument(
        "--saturation-records", type=int, default=1_000_000, help="pre-filled records"
    )
    group.add_argument(
        "--pipelines",
        default=",".join(p.name for p in PIPELINES),
        help="of: " + ", ".join(p.name for p in PIPELINES),
    )
    group.add_argument("--streams-threads", type=int, default=PARTITIONS)
    group.add_argument(
        "--saturation-only",
        action="store_true",
        help="only the saturation of each pipeline, --runs times (medians); print, no docs",
    )


def _worker(role: str, spec: dict[str, Any], log: IO[str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "benchmarks._latency_worker", role, json.dumps(spec)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )


def _wait_for(proc: subprocess.Popen[str], word: str, log: IO[str], timeout: float = 120) -> None:
    """Read ``proc``'s stdout until a line ``word``.

    Raises:
        RuntimeError: It exited or stayed silent for ``timeout`` s (with its log's tail).
    """
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if sel.select(deadline - time.monotonic()):
                line = proc.stdout.readline()
                if line.strip() == word:
                    return
                if not line:
                    break
    proc.kill()
    log.flush()
    tail = Path(log.name).read_text()[-2000:]
    raise RuntimeError(f"process {proc.pid} did not print {word}: {tail}")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far, every thread (Linux /proc)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _start(
    p: Pipeline,
    bs: str,
    source: str,
    out: str,
    interval_ms: int,
    args: argparse.Namespace,
    log: IO[str],
) -> subprocess.Popen[str]:
    """Start the pipeline's process and wait until it owns its partitions."""
    if p.kind != "streams":
        spec = {"bootstrap": bs, "source": source, "output": out, "commit_interval_ms": interval_ms}
        proc = _worker(p.kind, spec, log)
        _wait_for(proc, "READY", log)
        return proc
    app = _streams.build()
    command = app.command(
        bs,
        source,
        out,
        commit_interval_ms=interval_ms,
        guarantee="exactly_once_v2" if p.guarantee == "exactly_once" else "at_least_once",
        threads=args.streams_threads,
        state_dir=args.latency_tmp,
        application_id=f"bench-{uuid.uuid4().hex[:8]}",
    )
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log, text=True)
    _wait_for(proc, "RUNNING", log)
    return proc


def _stop(proc: subprocess.Popen[str]) -> None:
    proc.terminate()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _reader_result(reader: subprocess.Popen[str], timeout: float) -> dict[str, Any]:
    out, _ = reader.communicate(timeout=timeout)
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if reader.returncode != 0 or not lines:
        raise RuntimeError(f"the reader failed (exit {reader.returncode})")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def saturation(p: Pipeline, bs: str, args: argparse.Namespace) -> dict[str, float]:
    """Records/s and CPU µs per record of ``p`` copying a pre-filled topic as fast as it can."""
    from benchmarks._latency_worker import produce

    n = args.saturation_records
    source, out = topic(bs, PARTITIONS), topic(bs, PARTITIONS)
    produce(
        {
            "bootstrap": bs,
            "topic": source,
            "count": n,
            "rate": 0,
            "size": args.latency_size,
            "linger_ms": 20,
        }
    )
    settle()
    with tempfile.NamedTemporaryFile("w+", dir=args.latency_tmp, suffix=".log") as log:
        reader_spec = {
            "bootstrap": bs,
            "topic": out,
            "isolation": p.isolation,
            "first": 0,
            "last": n,
            "deadline": time.time() + 600,
        }
        reader = _worker("reader", reader_spec, log)
        _wait_for(reader, "READY", log)
        proc = _start(p, bs, source, out, SATURATION_INTERVAL_MS, args, log)
        cpu0 = cpu_seconds(proc.pid)
        result = _reader_result(reader, 660)
        cpu1 = cpu_seconds(proc.pid)
        _stop(proc)
    drop_topics(bs)
    if result["missing"]:
        raise RuntimeError(f"{p.label}: {result['missing']} of {n} records never arrived")
    seconds = result["last_at"] - result["first_at"]
    return {"rate": n / seconds, "cpu_us": (cpu1 - cpu0) / n * 1e6}


def case(
    p: Pipeline, bs: str, interval_ms: int, rate: int, args: argparse.Namespace
) -> dict[str, Any]:
    """One paced case: latency percentiles, output records/s and CPU per record (see module)."""
    source, out = topic(bs, PARTITIONS), topic(bs, PARTITIONS)
    warm, measured = args.latency_warmup, args.latency_duration
    first, last = int(warm * rate), int((warm + measured) * rate)
    settle()
    with tempfile.NamedTemporaryFile("w+", dir=args.latency_tmp, suffix=".log") as log:
        proc = _start(p, bs, source, out, interval_ms, args, log)
        start_at = time.time() + 1.0
        t0, t1 = start_at + warm, start_at + warm + measured
        drain = max(10.0, 5 * interval_ms / 1000)
        reader_spec = {
            "bootstrap": bs,
            "topic": out,
            "isolation": p.isolation,
            "first": first,
            "last": last,
            "deadline": t1 + drain,
            "window": (t0, t1),
        }
        reader = _worker("reader", reader_spec, log)
        _wait_for(reader, "READY", log)
        # a second past the window: the window's last records are not the stream's last
        count = last + rate
        produce_spec = {
            "bootstrap": bs,
            "topic": source,
            "count": count,
            "rate": rate,
            "size": args.latency_size,
            "start_at": start_at,
        }
        producer = _worker("producer", produce_spec, log)
        time.sleep(max(0.0, t0 - time.time()))
        cpu0 = cpu_seconds(proc.pid)
        time.sleep(max(0.0, t1 - time.time()))
        cpu1 = cpu_seconds(proc.pid)
        result = _reader_result(reader, drain + 60)
        producer.wait(60)
        _stop(proc)
    drop_topics(bs)
    outputs = result["in_window"]
    return {
        **{k: result[k] for k in ("p50_ms", "p99_ms", "p999_ms", "max_ms", "missing")},
        "rate": outputs / measured,
        "cpu_us": (cpu1 - cpu0) / outputs * 1e6 if outputs else None,
    }


def _pick(args: argparse.Namespace) -> list[Pipeline]:
    names = args.pipelines.split(",")
    unknown = set(names) - {p.name for p in PIPELINES}
    if unknown:
        raise SystemExit(
            f"--pipelines: unknown {sorted(unknown)}; of {[p.name for p in PIPELINES]}"
        )
    return [p for p in PIPELINES if p.name in names]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:,.1f}"


def run(args: argparse.Namespace) -> None:
    """Measure every case ``--runs`` times; print the table; write the docs section and plot."""
    from benchmarks import _latency_report

    if args.quick:  # what the command line left at its default
        for key, default, quick in QUICK:
            if getattr(args, key) == default:
                setattr(args, key, quick)
    pipelines = _pick(args)
    intervals = [int(x) for x in args.latency_intervals.split(",")]
    if any(p.kind == "streams" for p in pipelines):
        _streams.build()  # Maven and javac, once, before any clock
    if args.saturation_only:
        saturation_medians(pipelines, args)
        return
    cases: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="latency-") as tmp, broker(args.bootstrap) as bs:
        args.latency_tmp = tmp
        # a fresh broker runs the first pass of any path at about half speed (run.py's warm-up)
        progress(f"latency: warm-up (discarded): saturation of {pipelines[0].label} ...")
        saturation(pipelines[0], bs, args)
        sat: dict[str, dict[str, float]] = {}
        for p in pipelines:
            progress(f"latency: saturation of {p.label} ({args.saturation_records:,} records) ...")
            sat[p.name] = saturation(p, bs, args)
            rate, cpu = sat[p.name]["rate"], sat[p.name]["cpu_us"]
            progress(f"    {rate:,.0f} records/s, {cpu:.2f} µs CPU/record")
        offered = {(p.name, "light"): args.light_rate for p in pipelines} | {
            (p.name, "high"): args.rate or int(HIGH_SHARE * sat[p.name]["rate"]) for p in pipelines
        }
        total, done = args.runs * 2 * len(intervals) * len(pipelines), 0
        for rep in range(args.runs):
            for load in ("light", "high"):
                for interval in intervals:
                    shift = (rep + interval) % len(pipelines)
                    for p in pipelines[shift:] + pipelines[:shift]:
                        rate = offered[(p.name, load)]
                        r = case(p, bs, interval, rate, args)
                        cases.setdefault((p.name, load, interval), []).append(r)
                        done += 1
                        progress(
                            f"latency {done}/{total} run {rep + 1}: {p.label}, {interval} ms,"
                            f" {rate:,}/s: p50 {_ms(r['p50_ms'])} p99 {_ms(r['p99_ms'])}"
                            f" p99.9 {_ms(r['p999_ms'])} max {_ms(r['max_ms'])} ms;"
                            f" {r['rate']:,.0f} records/s; {_ms(r['cpu_us'])} µs CPU/record"
                            + (f"; {r['missing']:,} never arrived" if r["missing"] else "")
                        )
    rows = []
    for p in pipelines:
        for load in ("light", "high"):
            for interval in intervals:
                reps = cases[(p.name, load, interval)]
                row: dict[str, Any] = {
                    "pipeline": p.label,
                    "load": load,
                    "interval": interval,
                    "offered": offered[(p.name, load)],
                    "runs": len(reps),
                    "missing": max(r["missing"] for r in reps),
                }
                for key in METRICS:
                    values = [r[key] for r in reps if r[key] is not None]
                    row[key] = statistics.median(values) if values else None
                rows.append(row)
    saturated = [(p.label, sat[p.name]) for p in pipelines]
    context = (
        f"{platform.python_implementation()} {platform.python_version()}, {os.cpu_count()} cores"
    )
    markdown = _latency_report.markdown(rows, saturated, args, context)
    print(markdown)
    if not args.no_docs:
        _latency_report.write_docs(DOCS / "performance.md", markdown, BEGIN, END)
        _latency_report.plot(rows, DOCS / "latency.png")
        progress("wrote the latency section of docs/performance.md and docs/latency.png")


def saturation_medians(pipelines: list[Pipeline], args: argparse.Namespace) -> None:
    """Each pipeline's saturation ``--runs`` times, in rotating order; print the medians."""
    found: dict[str, list[dict[str, float]]] = {p.name: [] for p in pipelines}
    with tempfile.TemporaryDirectory(prefix="latency-") as tmp, broker(args.bootstrap) as bs:
        args.latency_tmp = tmp
        progress(f"saturation: warm-up (discarded): {pipelines[0].label} ...")
        saturation(pipelines[0], bs, args)
        for rep in range(args.runs):
            shift = rep % len(pipelines)
            for p in pipelines[shift:] + pipelines[:shift]:
                r = saturation(p, bs, args)
                found[p.name].append(r)
                progress(
                    f"saturation run {rep + 1}: {p.label}: {r['rate']:,.0f} records/s, "
                    f"{r['cpu_us']:.2f} µs CPU/record"
                )
    print(
        f"\n{args.latency_size} B, {args.saturation_records:,} records, "
        f"{SATURATION_INTERVAL_MS} ms interval, medians of {args.runs}\n"
        "| pipeline | records/s | CPU µs/record | runs (records/s) |\n| --- | ---: | ---: | --- |"
    )
    for p in pipelines:
        rates = [r["rate"] for r in found[p.name]]
        cpu = statistics.median(r["cpu_us"] for r in found[p.name])
        each = ", ".join(f"{x:,.0f}" for x in rates)
        print(f"| {p.label} | {statistics.median(rates):,.0f} | {cpu:.2f} | {each} |")
