"""One command for the peer benchmarks: ``.venv/bin/python -m benchmarks.run``.

Measures, in one run on one local broker, records/s (and producer delivery latency, and the
client's and the machine's CPU per record) of the SDK against its peers, with medians over
``--runs`` repetitions whose case order rotates and runs backwards every other time, each
target's cases back to back (after one discarded warm-up pass of the raw peers on the fresh
broker; the page cache written back before each case), then prints the ratios against the
issue's targets and writes ``docs/performance.md`` (the table between the GENERATED markers)
and ``docs/performance.png``.

Examples::

    .venv/bin/python -m benchmarks.run                      # full: 1,000,000 records per case
    .venv/bin/python -m benchmarks.run --quick              # 100,000 records, 1 run
    .venv/bin/python -m benchmarks.run --only producer --sizes 100
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks import _aio, _consumers, _harness, _producers, _queue, _rpw
from benchmarks._harness import (
    CPU_KEYS,
    Result,
    bench_topics,
    broker,
    cpu_mark,
    cpu_per_record,
    drop_topics,
    fill,
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

# (group, ours, peer, target ratio or None)
TARGETS: list[tuple[str, str, str, float | None]] = [
    ("producer", "SDK at_least_once", "raw confluent-kafka (alo settings)", 0.9),
    ("producer", "SDK at_least_once send_many", "raw confluent-kafka (alo settings)", 0.95),
    ("producer", "SDK at_least_once send_batch", "raw confluent-kafka (alo settings)", 0.95),
    ("producer", "SDK at_least_once send_batch", "kafka-python", 10.0),
    ("producer", "SDK at_least_once", "kafka-python", 10.0),
    ("producer", "SDK at_least_once", _producers.RAW_POSITIONAL, None),
    ("producer", "SDK at_most_once", "raw confluent-kafka (alo settings)", None),
    ("producer", "SDK exactly_once (one transaction)", "raw confluent-kafka (alo settings)", None),
    ("producer", "SDK at_least_once", "kafka-producer-perf-test (Java)", None),
    ("consumer", "SDK at_least_once run", "raw confluent-kafka handler loop (alo settings)", 0.9),
    ("consumer", "SDK at_least_once run", "raw confluent-kafka (alo settings)", 0.5),
    ("consumer", "SDK at_least_once run_batch", "raw confluent-kafka (alo settings)", None),
    ("consumer", "SDK at_least_once run", "kafka-python", None),
    ("consumer", "SDK at_least_once run", "kafka-consumer-perf-test (Java)", None),
    ("read-process-write", "SDK Processor exactly_once", "SDK Processor at_least_once", 0.95),
    (
        "read-process-write",
        "SDK Processor exactly_once",
        "hand-written confluent-kafka EOS loop (handler)",
        0.9,
    ),
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
    ("read-process-write", "SDK Processor exactly_once", "Quix Streams 3.28.1 exactly-once", 1.0),
    ("asyncio producer", "SDK AsyncProducer at_least_once", _AIO_RAW, 0.9),
    ("asyncio producer", "SDK AsyncProducer at_least_once", "aiokafka 0.14 (alo settings)", 1.0),
    ("asyncio producer", "SDK AsyncProducer at_least_once", "SDK Producer at_least_once", None),
    ("read-process-write", "SDK AsyncProcessor exactly_once", "SDK Processor exactly_once", None),
    ("consumer", "SDK AsyncConsumer at_least_once run", "SDK at_least_once run", None),
    *[
        ("queue", _queue.label("sdk", w), _queue.label(peer, w), target)
        for w in (1, 4)
        for peer, target in (("raw", 0.9), ("group", None))
    ],
]


def _cases(args: argparse.Namespace, bs: str, size: int) -> list[tuple[str, Callable[[], Any]]]:
    """The measurements of one repetition for one record size, as (label, thunk)."""
    n, slow_n, rpw_n = args.records, min(args.records, args.slow_peer_records), args.rpw_records
    # the producer cases build their own payloads in their child processes: only the groups
    # that fill topics or produce in-process need them here (1 GB at 1 KB)
    data = payloads(n, size) if args.only & {"consumer", "rpw", "aio", "queue"} else []
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
    if "consumer" in args.only:
        filled = topic(bs)
        fill(bs, filled, data)
        cases += [
            ("raw consumer", lambda: _consumers.raw_confluent(bs, filled, n, size)),
            ("raw handler loop", lambda: _consumers.raw_handler_loop(bs, filled, n, size)),
            (
                "SDK alo run",
                lambda: _consumers.sdk_consumer(bs, filled, n, size, "at_least_once", False),
            ),
            (
                "SDK alo run_batch",
                lambda: _consumers.sdk_consumer(bs, filled, n, size, "at_least_once", True),
            ),
            (
                "SDK amo run",
                lambda: _consumers.sdk_consumer(bs, filled, n, size, "at_most_once", False),
            ),
            ("kafka-python consumer", lambda: _consumers.kafka_python(bs, filled, slow_n, size)),
            ("perf-test consumer", lambda: _consumers.perf_test(bs, filled, n, size)),
        ]
    if "rpw" in args.only:
        source = topic(bs)
        fill(bs, source, data[:rpw_n])
        cases += [
            ("Processor eos", lambda: _rpw.processor(bs, source, rpw_n, size, "exactly_once")),
            ("Processor alo", lambda: _rpw.processor(bs, source, rpw_n, size, "at_least_once")),
            ("Processor amo", lambda: _rpw.processor(bs, source, rpw_n, size, "at_most_once")),
            (
                "Processor eos (default record cap)",
                lambda: _rpw.processor(bs, source, rpw_n, size, "exactly_once", default_cap=True),
            ),
            ("hand-written eos", lambda: _rpw.hand_written(bs, source, rpw_n, size)),
            (
                "hand-written eos (handler)",
                lambda: _rpw.hand_written(bs, source, rpw_n, size, with_handler=True),
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
                    lambda: _consumers.sdk_consumer(bs, filled, n, size, "at_least_once", False),
                )
            )
        cases.append(
            ("SDK AsyncConsumer run", lambda: _aio.sdk_async_consumer(bs, filled, n, size))
        )
        if "rpw" not in args.only:  # the sync Processor it is compared with
            source = topic(bs)
            fill(bs, source, data[:rpw_n])
            cases.append(
                ("Processor eos", lambda: _rpw.processor(bs, source, rpw_n, size, "exactly_once"))
            )
        cases.append(
            (
                "AsyncProcessor eos",
                lambda: _rpw.processor(bs, source, rpw_n, size, "exactly_once", front="async"),
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
    return cases


def _sync_in_aio_group(bs: str, data: list[tuple[bytes, bytes]], size: int) -> Result:
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
    import sys

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


def _memory_markdown(peaks: dict[str, list[float]], n: int, size: int) -> list[str]:
    import statistics

    raw, sdk = statistics.median(peaks["raw"]), statistics.median(peaks["sdk"])
    ratio = sdk / raw
    met = "yes" if ratio <= MEMORY_TARGET else "**no**"
    return [
        "",
        f"Peak RSS while producing {n:,} records of {size} B (each case in its own process):",
        "",
        "| case | peak RSS MB (median) | runs | ratio | target | met |",
        "| --- | ---: | --- | ---: | ---: | --- |",
        f"| raw confluent-kafka (alo settings, on_delivery per record) | {raw:,.0f} | "
        + ", ".join(f"{x:,.0f}" for x in peaks["raw"])
        + " | | | |",
        f"| SDK at_least_once send() | {sdk:,.0f} | "
        + ", ".join(f"{x:,.0f}" for x in peaks["sdk"])
        + f" | {ratio:.2f}x | ≤ {MEMORY_TARGET:g}x | {met} |",
    ]


def _ratios(
    rows: list[Result], results: list[Result]
) -> list[tuple[str, str, str, int, float, float | None, float | None, list[float]]]:
    """Per target and size: (group, ours, peer, size, ratio, target, CPU ratio, ratios).

    The CPU ratio is the client's CPU per record, ours over the peer's; ratios are the
    repetitions' own. ``rows``: the medians (:func:`median_results`); ``results``: every
    repetition's measurements, which give each repetition's ratio of the two (back to back
    where :data:`BACK_TO_BACK` puts them together).
    """
    per_run: dict[tuple[int, int], list[Result]] = {}
    for r in results:
        per_run.setdefault((r.size, r.extra.get("repetition", -1)), []).append(r)
    each: dict[tuple[int, int], list[float]] = {}  # (size, index in TARGETS): ratios
    for (size, _run), done in sorted(per_run.items()):
        for index, a, b in _pairs(done):
            each.setdefault((size, index), []).append(a.rate / b.rate)
    out = []
    for size in sorted({r.size for r in rows}):
        for index, a, b in _pairs([r for r in rows if r.size == size]):
            group, ours, peer, target = TARGETS[index]
            cpu_a, cpu_b = a.extra.get("client_cpu_us"), b.extra.get("client_cpu_us")
            cpu = cpu_a / cpu_b if cpu_a and cpu_b else None
            reps = each.get((size, index), [])
            out.append((index, (group, ours, peer, size, a.rate / b.rate, target, cpu, reps)))
    out.sort(key=lambda item: item[0])  # by target; stable: sizes stay in order
    return [row for _index, row in out]


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


def _markdown(rows: list[Result], ratios: list[Any], args: argparse.Namespace) -> str:
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    lines = [
        f"Generated by `python -m benchmarks.run` on {when}: "
        f"{platform.python_implementation()} {platform.python_version()}, "
        f"{args.runs} run(s) per case "
        f"(median), {args.records:,} records per producer/consumer case "
        f"({min(args.records, args.slow_peer_records):,} for kafka-python and aiokafka), "
        f"{args.rpw_records:,} per read-process-write case, "
        f"{args.records * QUEUE_PASSES:,} per queue case.",
        "",
        "CPU columns: µs per record, medians of the repetitions, each taken around the whole case"
        " (its set-up and close included; a producer case runs in a fresh interpreter, so its"
        " start, imports and the building of its records count too, the same for every"
        " producer). *client*: the benchmark process and the subprocesses a case ran (every"
        " thread, librdkafka's too); *machine*: every core's busy time, the broker's included."
        " A ratio's *client CPU* is ours over the peer's: above 1, the SDK spent more CPU per"
        " record.",
        "",
        "| group | case | record size | records/s (median) | runs | p50 ms | p99 ms"
        " | client CPU µs/rec | machine CPU µs/rec |",
        "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: |",
    ]
    for r in sorted(rows, key=lambda r: (r.group, r.size, -r.rate)):
        p50 = f"{r.p50_ms:.1f}" if r.p50_ms is not None else ""
        p99 = f"{r.p99_ms:.1f}" if r.p99_ms is not None else ""
        runs = ", ".join(f"{x:,}" for x in r.extra.get("rates", []))
        cpu = " | ".join(f"{r.extra[k]:.2f}" if k in r.extra else "" for k in CPU_KEYS)
        lines.append(
            f"| {r.group} | {r.case} | {r.size} B | {r.rate:,.0f} | {runs} | {p50} | {p99}"
            f" | {cpu} |"
        )
    lines += [
        "",
        "A ratio is ours over the peer of the median rates (the target's measure). *Per"
        " repetition*: the two cases' ratio in each repetition, in the order they ran; the"
        " cases of a target run back to back (ours first every other repetition), the others"
        " wherever the rotation put them.",
        "",
        "| ours | peer | size | ratio | target | met | client CPU, ours / peer | per repetition |",
        "| --- | --- | ---: | ---: | ---: | --- | ---: | --- |",
    ]
    for _group, ours, peer, size, ratio, target, cpu, reps in ratios:
        met = "" if target is None else ("yes" if ratio >= target else "**no**")
        tgt = "" if target is None else f"≥ {target:g}x"
        cpu_ratio = "" if cpu is None else f"{cpu:.2f}x"
        each = ", ".join(f"{x:.2f}" for x in reps)
        lines.append(
            f"| {ours} | {peer} | {size} B | {ratio:.2f}x | {tgt} | {met} | {cpu_ratio} | {each} |"
        )
    lines += ["", "![records/s per case](performance.png)"]
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
    ("raw handler loop", "SDK alo run", "raw consumer"),
    ("Processor eos", "Processor alo", "hand-written eos (handler)"),
    ("SDK AsyncProducer", "raw AIOProducer"),
    ("queue raw x1", "queue sdk x1"),
    ("queue raw x4", "queue sdk x4"),
)
"""Case labels that run back to back in every repetition: each target's SDK case and its peers.

Measured (1 KB, ``send()`` against the raw producer, full run B): rotated one case at a time,
the two ran up to five minutes apart, and the same code's client CPU per record moved by up to
2x with the machine over minutes. Run next to each other, ours first every other repetition (a
block runs backwards with the rest), a ratio compares two cases on the same machine state.
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


WARM_UP = ("raw ", "hand-written eos", "queue raw x1")
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
    result.extra.update(cpu_per_record(before, after, result.records))
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
        help="fetch.queue.backoff.ms for every consumer, SDK and peers (default: each its own)",
    )
    args = parser.parse_args()
    _harness.FETCH_BACKOFF_MS = args.fetch_backoff_ms
    if args.quick:
        args.records, args.rpw_records, args.runs = 100_000, 50_000, 1
        args.memory_records = 100_000
    args.only = set(args.only.split(","))
    # the read-process-write source topic is filled from the run's records: more would never
    # arrive, and the copy would wait for them forever
    args.rpw_records = min(args.rpw_records, args.records)
    results: list[Result] = []
    with broker(args.bootstrap) as bs:
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
    markdown = _markdown(rows, ratios, args)
    if peaks is not None:
        markdown += "\n" + "\n".join(_memory_markdown(peaks, args.memory_records, 100))
    print(markdown)
    if not args.no_docs:
        _write_docs(markdown)
        _plot(rows, DOCS / "performance.png")
        progress("wrote docs/performance.md and docs/performance.png")


if __name__ == "__main__":
    main()
