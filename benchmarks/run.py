"""One command for the peer benchmarks: ``.venv/bin/python -m benchmarks.run``.

Measures, in one run on one local broker, records/s (and the client's and the machine's CPU
per record) of the SDK against its peers, with medians over ``--runs`` repetitions whose case
order rotates and runs backwards every other time, each target's cases back to back (after
one discarded warm-up pass of the raw peers on the fresh broker; the page cache written back
before each case). Every consumer, the SDK's and the peers', fetches with the same
``fetch.queue.backoff.ms`` (``--fetch-backoff-ms``, 10). Prints the ratios against
:data:`TARGETS` and writes ``docs/performance.md`` (the section between the GENERATED markers)
and ``docs/performance.png``.

Examples::

    .venv/bin/python -m benchmarks.run                  # every group, 1,000,000 records per case
    .venv/bin/python -m benchmarks.run --only producer,consumer,rpw,memory   # the SDK's paths
    .venv/bin/python -m benchmarks.run --quick          # 100,000 records, 1 run
    .venv/bin/python -m benchmarks.run --only producer --sizes 100 --no-docs
    .venv/bin/python -m benchmarks.run --only sink --sizes 100 --no-docs   # not in "every"
    .venv/bin/python -m benchmarks.run --only latency   # not in "every"; its own docs section
"""

from __future__ import annotations

import argparse
import functools
import platform
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from benchmarks import _aio, _consumers, _harness, _latency, _producers, _queue, _rpw, _sink
from benchmarks._harness import (
    CPU_KEYS,
    Payloads,
    Result,
    bench_topics,
    broker,
    cpu_mark,
    cpu_per_record,
    drop_topics,
    fill,
    generated_by,
    median_results,
    payloads,
    progress,
    settle,
    topic,
)

DOCS = Path(__file__).resolve().parents[1] / "docs"
BEGIN, END = "<!-- GENERATED:BEGIN -->", "<!-- GENERATED:END -->"

_AIO_RAW = "raw confluent-kafka AIOProducer (alo settings)"

QUEUE_PASSES = 2
"""The queue cases read the records of a run this many times over (the topic is filled with them
that many times): 1,000,000 records took 4 workers ~1 s, and repetitions of one case spread
from 0.77M to 1.30M records/s."""

Target = float | dict[int, float] | None
"""The least ratio ours / peer: one for every record size, one per size (bytes), or none."""

TARGETS: list[tuple[str, str, str, Target]] = [
    ("producer", "SDK at_least_once", "raw confluent-kafka (alo settings)", 0.85),
    ("producer", "SDK at_least_once", "kafka-python", 10.0),
    ("producer", "SDK at_least_once send_batch", "kafka-python", 10.0),
    ("producer", "SDK at_least_once send_many", "raw confluent-kafka (alo settings)", None),
    ("producer", "SDK at_least_once send_batch", "raw confluent-kafka (alo settings)", None),
    ("producer", "SDK at_least_once", _producers.RAW_POSITIONAL, None),
    ("producer", "SDK at_most_once", "raw confluent-kafka (alo settings)", None),
    ("producer", "SDK exactly_once (one transaction)", "raw confluent-kafka (alo settings)", None),
    ("producer", "SDK at_least_once", "kafka-producer-perf-test (Java)", None),
    (
        "consumer",
        "SDK at_least_once run",
        "raw confluent-kafka handler loop (alo settings)",
        {100: 0.8, 1024: 0.85},
    ),
    ("consumer", "SDK at_least_once run", "raw confluent-kafka (alo settings)", None),
    ("consumer", "SDK at_least_once run_batch", "raw confluent-kafka (alo settings)", None),
    ("consumer", "SDK at_least_once run", "kafka-python", None),
    ("consumer", "SDK at_least_once run", "kafka-consumer-perf-test (Java)", None),
    (
        "read-process-write",
        "SDK Processor exactly_once",
        "hand-written confluent-kafka EOS loop (handler)",
        {100: 0.8, 1024: 0.85},
    ),
    ("read-process-write", "SDK Processor exactly_once", "Quix Streams 3.28.1 exactly-once", 1.0),
    ("read-process-write", "SDK Processor exactly_once", "SDK Processor at_least_once", None),
    (
        "read-process-write",
        "SDK Processor exactly_once",
        "hand-written confluent-kafka EOS loop",
        None,
    ),
    (
        "read-process-write",
        "SDK Processor exactly_once (default record cap)",
        "hand-written confluent-kafka EOS loop (handler)",
        None,
    ),
    ("asyncio producer", "SDK AsyncProducer at_least_once", _AIO_RAW, 0.9),
    ("asyncio producer", "SDK AsyncProducer at_least_once", "aiokafka 0.14 (alo settings)", 1.0),
    ("asyncio producer", "SDK AsyncProducer at_least_once", "SDK Producer at_least_once", None),
    # #47: each asyncio twin at 0.9 of its sync twin, at 100 B and 1 KB
    ("read-process-write", "SDK AsyncProcessor exactly_once", "SDK Processor exactly_once", 0.9),
    ("consumer", "SDK AsyncConsumer at_least_once run", "SDK at_least_once run", 0.9),
    ("sink", _sink.SINK, _sink.HAND_WRITTEN, 0.9),
    ("sink", _sink.SINK, _sink.AT_LEAST_ONCE, None),
    *[
        ("queue", _queue.label("sdk", w), _queue.label(peer, w), target)
        for w in (1, 4)
        for peer, target in (("raw", 0.9), ("group", None))
    ],
]
"""(group, ours, peer, target): the comparisons, in the order the tables give them.

The page shows the rows with a target; the console prints every row.
"""


def target_at(target: Target, size: int) -> float | None:
    """The target ratio of ``target`` at records of ``size`` bytes (None: no target there)."""
    return target.get(size) if isinstance(target, dict) else target


def _cases(args: argparse.Namespace, bs: str, size: int) -> list[tuple[str, Callable[[], Any]]]:
    """The measurements of one repetition for one record size, as (label, thunk)."""
    n, slow_n, rpw_n = args.records, min(args.records, args.slow_peer_records), args.rpw_records
    # the producer cases build their own payloads in their child processes: only the groups
    # that fill topics or produce in-process need them here (1 GB at 1 KB)
    data = payloads(n, size) if args.only & {"consumer", "rpw", "aio", "queue", "sink"} else ()
    cases: list[tuple[str, Callable[[], Any]]] = []
    if "producer" in args.only:
        fresh = _producers.in_fresh_process  # each in a new interpreter (see its docstring)
        cases += [
            ("raw producer", lambda: fresh("raw", bs, n, size)),
            ("raw producer (positional)", lambda: fresh("raw", bs, n, size, True)),
            ("SDK alo send", lambda: fresh("sdk", bs, n, size, "at_least_once")),
            ("SDK alo send_many", lambda: fresh("sdk", bs, n, size, "at_least_once", "send_many")),
            (
                "SDK alo send_batch",
                lambda: fresh("sdk", bs, n, size, "at_least_once", "send_batch"),
            ),
            ("SDK amo send", lambda: fresh("sdk", bs, n, size, "at_most_once")),
            ("SDK eos send", lambda: fresh("sdk", bs, n, size, "exactly_once")),
            ("kafka-python producer", lambda: fresh("kafka-python", bs, slow_n, size)),
            ("perf-test producer", lambda: _producers.perf_test(bs, n, size)),
        ]
    # the consumer, read-process-write and asyncio-consumer cases each run in a new
    # interpreter too, counting their CPU from the call on: in one process a case paid for
    # the garbage of the ones before it (_harness.in_fresh_process)
    isolated = functools.partial(_harness.in_fresh_process, _harness.with_own_cpu)
    if "consumer" in args.only:
        filled = topic(bs)
        fill(bs, filled, data)
        cases += [
            ("raw consumer", lambda: isolated(_consumers.raw_confluent, bs, filled, n, size)),
            (
                "raw handler loop",
                lambda: isolated(_consumers.raw_handler_loop, bs, filled, n, size),
            ),
            (
                "SDK alo run",
                lambda: isolated(
                    _consumers.sdk_consumer, bs, filled, n, size, "at_least_once", False
                ),
            ),
            (
                "SDK alo run_batch",
                lambda: isolated(
                    _consumers.sdk_consumer, bs, filled, n, size, "at_least_once", True
                ),
            ),
            (
                "SDK amo run",
                lambda: isolated(
                    _consumers.sdk_consumer, bs, filled, n, size, "at_most_once", False
                ),
            ),
            ("kafka-python consumer", lambda: _consumers.kafka_python(bs, filled, slow_n, size)),
            ("perf-test consumer", lambda: _consumers.perf_test(bs, filled, n, size)),
        ]
    if "rpw" in args.only:
        source = topic(bs)
        fill(bs, source, data[:rpw_n])
        cases += [
            (
                "Processor eos",
                lambda: isolated(_rpw.processor, bs, source, rpw_n, size, "exactly_once"),
            ),
            (
                "Processor alo",
                lambda: isolated(_rpw.processor, bs, source, rpw_n, size, "at_least_once"),
            ),
            (
                "Processor amo",
                lambda: isolated(_rpw.processor, bs, source, rpw_n, size, "at_most_once"),
            ),
            (
                "Processor eos (default record cap)",
                lambda: isolated(
                    _rpw.processor, bs, source, rpw_n, size, "exactly_once", default_cap=True
                ),
            ),
            ("hand-written eos", lambda: isolated(_rpw.hand_written, bs, source, rpw_n, size)),
            (
                "hand-written eos (handler)",
                lambda: isolated(_rpw.hand_written, bs, source, rpw_n, size, with_handler=True),
            ),
        ]
        if not args.no_quix:
            cases.append(("Quix eos", lambda: _rpw.quix(bs, source, rpw_n, size)))
    if "aio" in args.only:
        cases += [
            ("SDK AsyncProducer", lambda: _aio.sdk_async(bs, data, size)),
            ("raw AIOProducer", lambda: _aio.raw_aio(bs, data, size)),
            ("aiokafka", lambda: _aio.aiokafka(bs, data[:slow_n], size)),
            ("SDK Producer (sync)", lambda: _sync_in_aio_group(bs, data, size)),
        ]
        if "consumer" not in args.only:  # the sync Consumer it is compared with
            filled = topic(bs)
            fill(bs, filled, data)
            cases.append(
                (
                    "SDK alo run",
                    lambda: isolated(
                        _consumers.sdk_consumer, bs, filled, n, size, "at_least_once", False
                    ),
                )
            )
        cases.append(
            (
                "SDK AsyncConsumer run",
                lambda: isolated(_aio.sdk_async_consumer, bs, filled, n, size),
            )
        )
        if "rpw" not in args.only:  # the sync Processor it is compared with
            source = topic(bs)
            fill(bs, source, data[:rpw_n])
            cases.append(
                (
                    "Processor eos",
                    lambda: isolated(_rpw.processor, bs, source, rpw_n, size, "exactly_once"),
                )
            )
        cases.append(
            (
                "AsyncProcessor eos",
                lambda: isolated(
                    _rpw.processor, bs, source, rpw_n, size, "exactly_once", front="async"
                ),
            )
        )
    if "queue" in args.only:
        shared = topic(bs)
        for _ in range(QUEUE_PASSES):
            fill(bs, shared, data)
        queue_n = n * QUEUE_PASSES
        cases += [
            (
                f"queue {kind} x{workers}",
                lambda kind=kind, workers=workers: _queue.queue_case(  # type: ignore[misc]
                    bs, shared, queue_n, size, kind, workers
                ),
            )
            for workers in (1, 4)
            for kind in ("raw", "sdk", "group")
        ]
    if "sink" in args.only:
        sink_source, sink_n, uri = topic(bs), args.sink_records, args.postgres_uri
        fill(bs, sink_source, data[:sink_n])
        cases += [
            (label, lambda case=case: case(bs, sink_source, uri, sink_n, size))  # type: ignore[misc]
            for label, case in (
                ("DatabaseSink eos", _sink.sink),
                ("hand-written sink eos", _sink.hand_written),
                ("Consumer alo sink", _sink.at_least_once),
            )
        ]
    return cases


def _sync_in_aio_group(bs: str, data: Payloads, size: int) -> Result:
    """The sync Producer's send(), in the asyncio group: what the async front end costs."""
    result = _producers.sdk_producer(bs, data, size, "at_least_once")
    result.group, result.case = _aio.GROUP, "SDK Producer at_least_once"
    return result


MEMORY_TARGET = 1.2
"""Peak RSS of SDK ``send()`` over the raw loop, producing ``--memory-records`` records."""


def _memory(bs: str, n: int, size: int, runs: int) -> dict[str, list[float]]:
    """Peak RSS (MB) of the raw and the SDK producer, each run in its own process."""
    import json
    import subprocess

    peaks: dict[str, list[float]] = {"raw": [], "sdk": []}
    for run in range(runs):
        for mode in ("raw", "sdk") if run % 2 == 0 else ("sdk", "raw"):
            progress(f"memory run {run + 1}/{runs}: {mode} producing {n:,} x {size} B ...")
            args = [mode, bs, topic(bs), str(n), str(size)]
            out = subprocess.run(
                [sys.executable, "-m", "benchmarks._memory", *args],
                cwd=DOCS.parent,
                capture_output=True,
                text=True,
                timeout=900,
                check=True,
            ).stdout
            data = json.loads(out.strip().splitlines()[-1])
            peaks[mode].append(data["maxrss_kb"] / 1024)
            progress(f"    {mode}: peak RSS {data['maxrss_kb'] / 1024:,.0f} MB")
    return peaks


def _memory_row(peaks: dict[str, list[float]], n: int, size: int) -> str:
    """The peak-RSS target as a row of the targets table (MB; each repetition's ratio)."""
    raw, sdk = statistics.median(peaks["raw"]), statistics.median(peaks["sdk"])
    ratio = sdk / raw
    met = "yes" if ratio <= MEMORY_TARGET else "**no**"
    each = ", ".join(f"{a / b:.2f}" for a, b in zip(peaks["sdk"], peaks["raw"], strict=False))
    return (
        f"| peak RSS producing {n:,} records: SDK at_least_once send() / raw confluent-kafka"
        f" (alo settings) | {size} B | {sdk:,.0f} MB | {raw:,.0f} MB | {ratio:.2f}x"
        f" | ≤ {MEMORY_TARGET:g}x | {met} | | {each} | |"
    )


class Ratio(NamedTuple):
    """One comparison of :data:`TARGETS` at one record size."""

    ours: str
    peer: str
    size: int
    ours_rate: float
    peer_rate: float
    target: float | None
    cpu: tuple[float | None, float | None]
    """Client CPU µs per record, ours and the peer's (medians of the repetitions)."""
    reps: list[float]
    """Each repetition's ratio, in the order they ran."""
    gaps: list[float]
    """Each repetition's client CPU µs/record, ours minus the peer's, in the order they ran.

    Paired per repetition. Where :data:`BACK_TO_BACK` runs the two next to each other, the
    machine's drift over minutes, which moves both, drops out of the difference; the median of
    these is then what a per-record cost target is judged by, not the difference of the two
    medians (:attr:`cpu`).
    """

    @property
    def gap(self) -> float | None:
        """The median of :attr:`gaps`: ours over the peer, client CPU µs per record."""
        return statistics.median(self.gaps) if self.gaps else None

    @property
    def ratio(self) -> float:
        """Ours over the peer of the median rates: what a target is judged by."""
        return self.ours_rate / self.peer_rate


def _ratios(rows: list[Result], results: list[Result]) -> list[Ratio]:
    """Every comparison of :data:`TARGETS` that ran, by target, then by size.

    ``rows``: the medians (:func:`median_results`); ``results``: every repetition's
    measurements, which give each repetition's ratio of the two and its client CPU gap (back
    to back where :data:`BACK_TO_BACK` puts them together).
    """
    per_run: dict[tuple[int, int], list[Result]] = {}
    for r in results:
        per_run.setdefault((r.size, r.extra.get("repetition", -1)), []).append(r)
    each: dict[tuple[int, int], list[float]] = {}  # (size, index in TARGETS): ratios
    gaps: dict[tuple[int, int], list[float]] = {}  # the same: client CPU, ours minus peer
    for (size, _run), done in sorted(per_run.items()):
        for index, a, b in _pairs(done):
            each.setdefault((size, index), []).append(a.rate / b.rate)
            ours_cpu, peer_cpu = a.extra.get("client_cpu_us"), b.extra.get("client_cpu_us")
            if ours_cpu is not None and peer_cpu is not None:
                gaps.setdefault((size, index), []).append(ours_cpu - peer_cpu)
    out = []
    for size in sorted({r.size for r in rows}):
        for index, a, b in _pairs([r for r in rows if r.size == size]):
            _group, ours, peer, target = TARGETS[index]
            cpu = (a.extra.get("client_cpu_us"), b.extra.get("client_cpu_us"))
            reps, gap = each.get((size, index), []), gaps.get((size, index), [])
            limit = target_at(target, size)
            ratio = Ratio(ours, peer, size, a.rate, b.rate, limit, cpu, reps, gap)
            out.append((index, ratio))
    out.sort(key=lambda item: item[0])  # by target; stable: sizes stay in order
    return [ratio for _index, ratio in out]


def _pairs(results: list[Result]) -> list[tuple[int, Result, Result]]:
    """(index in :data:`TARGETS`, ours, the peer) for every target with both in ``results``.

    ``results``: measurements of one size (one repetition's, or the medians).
    """
    by = {(r.group, r.case): r for r in results}
    out = []
    for index, (group, ours, peer, _target) in enumerate(TARGETS):
        a, b = by.get((group, ours)), by.get((group, peer))
        if a and b and a.rate and b.rate:
            out.append((index, a, b))
    return out


def _cpu(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}"


def _ratio_table(ratios: list[Ratio], *, every: bool) -> list[str]:
    """The ratios as a markdown table: those with a target, or ``every`` one."""
    lines = [
        "| ours / peer | size | ours records/s | peer records/s | ratio | target | met"
        " | client CPU µs/record, ours / peer | per repetition"
        " | client CPU over the peer, µs/record: median of pairs (each) |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- | --- |",
    ]
    for r in ratios:
        if r.target is None and not every:
            continue
        met = "" if r.target is None else ("yes" if r.ratio >= r.target else "**no**")
        target = "" if r.target is None else f"≥ {r.target:g}x"
        cpu = "" if r.cpu == (None, None) else f"{_cpu(r.cpu[0])} / {_cpu(r.cpu[1])}"
        reps = ", ".join(f"{x:.2f}" for x in r.reps)
        each = ", ".join(f"{x:+.2f}" for x in r.gaps)
        gap = "" if r.gap is None else f"{r.gap:+.2f} ({each})"
        lines.append(
            f"| {r.ours} / {r.peer} | {r.size} B | {r.ours_rate:,.0f} | {r.peer_rate:,.0f}"
            f" | {r.ratio:.2f}x | {target} | {met} | {cpu} | {reps} | {gap} |"
        )
    return lines


def _rate_table(rows: list[Result]) -> list[str]:
    """Every case's median records/s and CPU per record: one row per case, columns per size."""
    sizes = sorted({r.size for r in rows})
    by = {(r.group, r.case, r.size): r for r in rows}
    head = "| group | case |" + "".join(
        f" {s} B records/s | {s} B CPU µs/record, client / machine |" for s in sizes
    )
    lines = [head, "| --- | --- |" + " ---: | ---: |" * len(sizes)]
    cases = {(r.group, r.case) for r in rows}

    def order(key: tuple[str, str]) -> tuple[str, float]:
        first = next(by[(*key, s)] for s in sizes if (*key, s) in by)
        return key[0], -first.rate

    for group, case in sorted(cases, key=order):
        cells = []
        for size in sizes:
            r = by.get((group, case, size))
            if r is None:
                cells.append(" | |")
                continue
            cpu = " / ".join(_cpu(r.extra.get(k)) for k in CPU_KEYS)
            cells.append(f" {r.rate:,.0f} | {cpu} |")
        lines.append(f"| {group} | {case} |" + "".join(cells))
    return lines


def _markdown(
    rows: list[Result],
    ratios: list[Ratio],
    args: argparse.Namespace,
    peaks: dict[str, list[float]] | None = None,
) -> str:
    """The generated section of docs/performance.md: the targets, every case's rate, the plot."""
    lines = [
        f"{generated_by(args.argv)}: "
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"medians of {args.runs} repetition(s) per case; {args.records:,} records per producer"
        f" and consumer case ({min(args.records, args.slow_peer_records):,} for kafka-python"
        f" and aiokafka), {args.rpw_records:,} per read-process-write case"
        + (f", {args.records * QUEUE_PASSES:,} per queue case" if "queue" in args.only else "")
        + (f", {args.sink_records:,} per sink case" if "sink" in args.only else "")
        + f"; fetch.queue.backoff.ms {args.fetch_backoff_ms} on every consumer.",
        "",
        *_ratio_table(ratios, every=False),
    ]
    if peaks is not None:
        lines.append(_memory_row(peaks, args.memory_records, 100))
    lines += ["", *_rate_table(rows), "", "![records/s per case](performance.png)"]
    return "\n".join(lines)


def _plot(rows: list[Result], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = sorted({r.group for r in rows})
    fig, axes = plt.subplots(len(groups), 1, figsize=(10, 3.2 * len(groups)), squeeze=False)
    for ax, group in zip(axes[:, 0], groups, strict=True):
        sel = sorted((r for r in rows if r.group == group), key=lambda r: (r.size, r.rate))
        labels = [f"{r.case} [{r.size} B]" for r in sel]
        colors = ["tab:blue" if r.case.startswith("SDK") else "tab:gray" for r in sel]
        ax.barh(labels, [r.rate for r in sel], color=colors)
        ax.set_title(f"{group}: records/s (blue = kafka-semantics)")
        ax.tick_params(axis="y", labelsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


BACK_TO_BACK: tuple[tuple[str, ...], ...] = (
    ("raw producer", "SDK alo send"),
    ("raw handler loop", "SDK alo run", "SDK AsyncConsumer run"),
    ("hand-written eos (handler)", "Processor eos", "AsyncProcessor eos"),
    ("SDK AsyncProducer", "raw AIOProducer"),
    ("queue raw x1", "queue sdk x1"),
    ("queue raw x4", "queue sdk x4"),
    ("DatabaseSink eos", "hand-written sink eos", "Consumer alo sink"),
)
"""Case labels that run back to back in every repetition: each target's SDK case and its peers.

Measured (1 KB, ``send()`` against the raw producer): rotated one case at a time, the two ran
up to five minutes apart, and the same code's client CPU per record moved by up to 2x with the
machine over minutes. Run next to each other, ours first every other repetition (a
block runs backwards with the rest), a ratio compares two cases on the same machine state.
An asyncio twin runs beside its sync twin, which runs beside its peer: the async-over-sync
targets are judged the same way.
"""


def _blocks(
    cases: list[tuple[str, Callable[[], Any]]],
) -> list[list[tuple[str, Callable[[], Any]]]]:
    """Group ``cases`` into the blocks a repetition rotates: :data:`BACK_TO_BACK` or one case.

    A block takes the place of its first case; its cases keep the order of BACK_TO_BACK.
    """
    where = {label: i for i, block in enumerate(BACK_TO_BACK) for label in block}
    by_label = dict(cases)
    blocks: list[list[tuple[str, Callable[[], Any]]]] = []
    placed: set[int] = set()
    for label, thunk in cases:
        index = where.get(label)
        if index is None:
            blocks.append([(label, thunk)])
        elif index not in placed:  # the whole block, where its first case was
            placed.add(index)
            blocks.append([(x, by_label[x]) for x in BACK_TO_BACK[index] if x in by_label])
    return blocks


WARM_UP = ("raw ", "hand-written eos", "queue raw x1", "hand-written sink")
"""Label prefixes of the cases run once, discarded, before the first measured run."""


def _warm_up(cases: list[tuple[str, Callable[[], Any]]], size: int) -> None:
    """Run the raw peers once on the fresh broker and discard what they measured.

    Measured: on a broker just started, the first pass of every case ran at about half the
    speed of the later ones (raw producer, 300,000 x 100 B: 140,305 then 251,404 and 341,917
    records/s), while the JVM compiles the broker's produce, fetch, transaction and share-fetch
    paths. Without this pass the first case of the first run of each kind paid for it.
    """
    for label, thunk in cases:
        if label.startswith(WARM_UP):
            progress(f"{size} B warm-up (discarded): {label} ...")
            settle()
            thunk()


def _measure(thunk: Callable[[], Any], bs: str, shared: set[str]) -> Result | None:
    """Run one case from a clean page cache, with its CPU per record; drop what it wrote."""
    settle()
    before = cpu_mark()
    result: Result | None = thunk()
    after = cpu_mark()
    drop_topics(bs, keep=shared)  # what the case wrote: outside its clock
    if result is None:
        return None
    # a case that timed its own loop's CPU (the sink cases) keeps that figure
    for key, value in cpu_per_record(before, after, result.records).items():
        result.extra.setdefault(key, value)
    cpu = ", ".join(
        f"{key.split('_')[0]} CPU {result.extra[key]:.2f} µs/record"
        for key in CPU_KEYS
        if key in result.extra
    )
    progress(f"    {result.case}: {result.rate:,.0f} records/s; {cpu}")
    return result


def _write_docs(markdown: str) -> None:
    page = DOCS / "performance.md"
    text = page.read_text() if page.exists() else f"# Performance\n\n{BEGIN}\n{END}\n"
    if BEGIN not in text:
        text += f"\n{BEGIN}\n{END}\n"
    head, rest = text.split(BEGIN, 1)
    _old, tail = rest.split(END, 1)
    page.write_text(f"{head}{BEGIN}\n{markdown}\n{END}{tail}")


def main() -> None:
    """Run the selected cases, print the table and ratios, write docs/performance.*."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument(
        "--slow-peer-records", type=int, default=200_000, help="cap for kafka-python, aiokafka"
    )
    parser.add_argument("--rpw-records", type=int, default=1_000_000)
    parser.add_argument(
        "--sink-records", type=int, default=200_000, help="per case of the sink group"
    )
    parser.add_argument("--sizes", default="100,1024")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--only", default="producer,consumer,rpw,queue,aio,memory")
    parser.add_argument("--memory-records", type=int, default=1_000_000)
    parser.add_argument("--bootstrap", help="use this cluster instead of an embedded one")
    parser.add_argument("--no-quix", action="store_true", help="skip Quix Streams")
    parser.add_argument("--no-docs", action="store_true", help="print only; do not write docs/")
    parser.add_argument("--quick", action="store_true", help="100,000 records, 1 run")
    parser.add_argument(
        "--no-warm-up",
        action="store_true",
        help="skip the discarded first pass of the raw peers on a fresh broker",
    )
    parser.add_argument(
        "--fetch-backoff-ms",
        type=int,
        default=_harness.FETCH_BACKOFF_MS,
        help="fetch.queue.backoff.ms of every consumer, the SDK's and the peers' (default: 10)",
    )
    _latency.add_arguments(parser)
    args = parser.parse_args()
    args.argv = sys.argv[1:]
    _harness.FETCH_BACKOFF_MS = args.fetch_backoff_ms
    if args.quick:
        args.records, args.rpw_records, args.runs = 100_000, 50_000, 1
        args.memory_records = 100_000
    args.only = set(args.only.split(","))
    if "latency" in args.only:  # its own broker, table, docs section and plot
        _latency.run(args)
        args.only.discard("latency")
        if not args.only:
            return
    # the read-process-write source topic is filled from the run's records: more would never
    # arrive, and the copy would wait for them forever
    args.rpw_records = min(args.rpw_records, args.records)
    args.sink_records = min(args.sink_records, args.records)
    results: list[Result] = []
    with broker(args.bootstrap) as bs, _sink.postgres("sink" in args.only) as postgres_uri:
        args.postgres_uri = postgres_uri  # the sink group's database
        warm = not args.no_warm_up
        for size in (int(s) for s in args.sizes.split(",")):
            cases = _cases(args, bs, size)
            shared = bench_topics(bs)  # the size's filled sources, read by several cases
            if warm:
                _warm_up(cases, size)
                warm = False
            blocks = _blocks(cases)
            for run in range(args.runs if cases else 0):  # --only memory: no timed cases
                # rotated, and backwards every other repetition: a block and the others swap
                # places, and so do the cases in it (the producer cases at 1 KB: in one
                # process, alternating, the first repetitions ran at ~440k records/s and the
                # later ones at ~250k, whichever case they were)
                shift = run % len(blocks)
                order = blocks[shift:] + blocks[:shift]
                for block in order[::-1] if run % 2 else order:
                    done = []
                    for label, thunk in block[::-1] if run % 2 else block:
                        progress(f"{size} B run {run + 1}/{args.runs}: {label} ...")
                        result = _measure(thunk, bs, shared)
                        if result is not None:
                            result.extra["repetition"] = run
                            results.append(result)
                            done.append(result)
                    for _index, a, b in _pairs(done):
                        progress(f"    back to back: {a.case} / {b.case}: {a.rate / b.rate:.2f}x")
            drop_topics(bs)  # the size's sources too
        peaks = None
        if "memory" in args.only:
            peaks = _memory(bs, args.memory_records, 100, args.runs)
    rows = median_results(results)
    ratios = _ratios(rows, results)
    markdown = _markdown(rows, ratios, args, peaks)
    print(markdown)
    print("\nEvery comparison:\n\n" + "\n".join(_ratio_table(ratios, every=True)))
    if not args.no_docs:
        _write_docs(markdown)
        _plot(rows, DOCS / "performance.png")
        progress("wrote docs/performance.md and docs/performance.png")


if __name__ == "__main__":
    main()
