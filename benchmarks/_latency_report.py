"""The latency benchmark's table, its section of docs/performance.md and its plot."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from benchmarks._harness import generated_by


def _num(value: float | None, digits: int = 1) -> str:
    return "" if value is None else f"{value:,.{digits}f}"


def markdown(
    rows: list[dict[str, Any]],
    saturated: list[tuple[str, dict[str, float]]],
    args: argparse.Namespace,
    context: str,
) -> str:
    """The generated section: how it was made, the saturation table, the latency table, the plot."""
    lines = [
        f"{generated_by(args.argv)}: {context}; {args.latency_size} B records, "
        f"4 partitions, medians of {args.runs} repetition(s); per case "
        f"{args.latency_warmup:g} s discarded, then {args.latency_duration:g} s measured.",
        "",
        "| pipeline | saturation records/s (100 ms interval) | CPU µs/record |",
        "| --- | ---: | ---: |",
        *(f"| {label} | {s['rate']:,.0f} | {s['cpu_us']:.2f} |" for label, s in saturated),
        "",
        "| pipeline | offered records/s | commit interval ms | p50 ms | p99 ms | p99.9 ms"
        " | max ms | output records/s | CPU µs/record | never arrived |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for load in ("light", "high"):
        for r in rows:
            if r["load"] != load:
                continue
            lines.append(
                f"| {r['pipeline']} | {r['offered']:,} | {r['interval']} | {_num(r['p50_ms'])}"
                f" | {_num(r['p99_ms'])} | {_num(r['p999_ms'])} | {_num(r['max_ms'])}"
                f" | {_num(r['rate'], 0)} | {_num(r['cpu_us'], 2)}"
                f" | {r['missing'] or ''} |"
            )
    lines += ["", "![latency percentiles and throughput per commit interval](latency.png)"]
    return "\n".join(lines)


def write_docs(page: Path, text: str, begin: str, end: str) -> None:
    """Replace the text between ``begin`` and ``end`` of ``page`` (appended if missing)."""
    old = page.read_text() if page.exists() else "# Performance\n"
    if begin not in old:
        old = old.rstrip("\n") + f"\n\n## Latency\n\n{begin}\n{end}\n"
    head, rest = old.split(begin, 1)
    _old, tail = rest.split(end, 1)
    page.write_text(f"{head}{begin}\n{text}\n{end}{tail}")


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """Latency percentiles per commit interval (log x, log y), output records/s on a twin axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    loads = [load for load in ("light", "high") if any(r["load"] == load for r in rows)]
    pipelines = list(dict.fromkeys(r["pipeline"] for r in rows))
    colors = plt.get_cmap("tab10")
    fig, axes = plt.subplots(len(loads), 1, figsize=(11, 5 * len(loads)), squeeze=False)
    for ax, load in zip(axes[:, 0], loads, strict=True):
        rate_ax = ax.twinx()
        for i, name in enumerate(pipelines):
            sel = sorted(
                (r for r in rows if r["load"] == load and r["pipeline"] == name),
                key=lambda r: r["interval"],
            )
            xs = [r["interval"] for r in sel]
            for key, style in (("p50_ms", ":"), ("p99_ms", "-"), ("p999_ms", "--")):
                ax.plot(
                    xs,
                    [r[key] for r in sel],
                    style,
                    marker="o",
                    markersize=3,
                    color=colors(i),
                    label=name if key == "p99_ms" else None,
                )
            rate_ax.plot(
                xs,
                [r["rate"] for r in sel],
                "-",
                marker="x",
                color=colors(i),
                alpha=0.35,
                linewidth=4,
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("commit interval (ms)")
        ax.set_ylabel("end-to-end latency (ms): p50 dotted, p99 solid, p99.9 dashed")
        rate_ax.set_ylabel("output records/s (thick, faint)")
        offered = sorted({r["offered"] for r in rows if r["load"] == load})
        title = "light load" if load == "light" else "~70 % of each pipeline's saturation"
        ax.set_title(f"{title} (offered: {', '.join(f'{o:,}' for o in offered)} records/s)")
        ax.legend(fontsize=6, ncol=3, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
