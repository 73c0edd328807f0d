"""Reliability target: ``python -m tests.reliability.run`` (see --help).

Usage: ``python -m tests.reliability.run [--records N] [--guarantee G] [--soak-seconds S]``,
or ``python -m tests.reliability.run --network [--records N] [--fault F ...]``.

Starts its own 3-node ``LocalCluster``, runs the fault pipeline (tests/reliability/_pipeline.py)
for each chosen guarantee with N records (default 1,000,000), stores the results in
docs/reliability-results.json and regenerates the table in docs/reliability.md. With
``--soak-seconds`` it runs the soak mode instead for each chosen guarantee (steady ``--rate``
after a ``--warmup``; throughput, p50/p99 end-to-end latency per 5 s window; plot
docs/reliability-soak.png). With ``--network`` it runs the network-fault matrix instead
(tests/reliability/_matrix.py; N default 50,000 per cell) and regenerates its table; it exits
non-zero when a guarantee broke or a client wedged. ``./dev.sh reliability [args]`` runs it
from the repository root.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

from sdk.testing.cluster import LocalCluster
from tests.reliability._matrix import run_matrix, table, violations
from tests.reliability._network_cases import FAULTS
from tests.reliability._pipeline import run_pipeline
from tests.reliability._soak import run_soak

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "reliability.md"
RESULTS = ROOT / "docs" / "reliability-results.json"
GUARANTEES = ("exactly_once", "at_least_once", "at_most_once")


def _table(results: dict[str, Any]) -> str:
    head = (
        "| guarantee | records | faults | output | lost | duplicated | out of order (per key) "
        "| source failures | processor aborts / txn timeouts / ambiguous / fenced / recreations "
        "| processor crashes / watchdog restarts "
        "| refused commits / stalled calls "
        "| wall |\n|" + " --- |" * 12
    )
    lines = [head]
    runs = results.get("pipeline", {}).values()
    for r in sorted(runs, key=lambda r: (r["records"], GUARANTEES.index(r["guarantee"]))):
        p = r["processors"]
        lines.append(
            f"| {r['guarantee']} | {r['records']:,} | {', '.join(r['faults'])} | {r['output']:,} "
            f"| **{r['lost']:,}** | **{r['duplicated']:,}** | **{r['out_of_order']:,}** "
            f"| {r['source_failed']:,} | {p['aborts']} / {p['transaction_timeouts']} / "
            f"{p.get('ambiguous', 'n/a')} / {p.get('fenced', 'n/a')} / "
            f"{p['producer_recreations']} | {len(r.get('processor_crashes', []))} / "
            f"{r.get('watchdog_restarts', 0)} "
            f"| {p.get('commit_refused', 'n/a')} / {p.get('stalled_calls', 'n/a')} "
            f"| {r['wall_seconds']:.0f} s |"
        )
    return "\n".join(lines)


def _soak_table(rows: list[dict[str, Any]]) -> str:
    out = ["| t (s) | sent/s | read/s | p50 (ms) | p99 (ms) |", "| --- | --- | --- | --- | --- |"]
    out += [
        f"| {r['t']} | {r.get('sent_per_s', 0):,} | {r['records_per_s']:,} | {r['p50_ms']} "
        f"| {r['p99_ms']} |"
        for r in rows
    ]
    return "\n".join(out)


def _plot(soaks: dict[str, dict[str, Any]], path: Path) -> bool:
    """One panel per soaked guarantee: p50/p99 latency and acknowledged/read records/s."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, axes = plt.subplots(len(soaks), 1, figsize=(8, 3.2 * len(soaks)), squeeze=False)
    for ax, (g, soak) in zip(axes[:, 0], soaks.items(), strict=True):
        rows = soak["rows"]
        t = [r["t"] for r in rows]
        ax.plot(t, [r["p50_ms"] for r in rows], label="p50 latency (ms)")
        ax.plot(t, [r["p99_ms"] for r in rows], label="p99 latency (ms)")
        ax.set_title(f"{g}: {soak['rate']:,} records/s offered")
        ax.set_xlabel("seconds after warm-up")
        ax.set_ylabel("ms")
        ax.set_ylim(bottom=0)
        ax2 = ax.twinx()
        ax2.plot(t, [r.get("sent_per_s", 0) for r in rows], "g--", label="acknowledged to source/s")
        ax2.plot(t, [r["records_per_s"] for r in rows], "k:", label="read from output/s")
        ax2.set_ylabel("records/s")
        ax2.set_ylim(bottom=0, top=max(soak["rate"] * 1.5, 1))
        lines = ax.get_lines() + ax2.get_lines()
        ax.legend(lines, [line.get_label() for line in lines], loc="upper right", fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def _soak_block(soaks: dict[str, dict[str, Any]]) -> str:
    parts = []
    for g, soak in soaks.items():
        parts.append(
            f"{g}, {soak['rate']:,} records/s offered for {soak['seconds']:g} s after a "
            f"{soak['warmup']:g} s warm-up; {soak['sent']:,} records acknowledged to the source, "
            f"{soak['read']:,} read from the output ({soak['distinct_read']:,} distinct), the "
            f"last {soak['drain_seconds']:g} s after the source finished:\n\n"
            + _soak_table(soak["rows"])
        )
    return "\n\n".join(parts)


def regenerate(results: dict[str, Any]) -> None:
    """Rewrite the generated blocks of docs/reliability.md from ``results``."""
    text = DOCS.read_text()
    blocks = {"pipeline": _table(results)}
    if results.get("network"):
        order = list(FAULTS)
        rows = sorted(results["network"].values(), key=lambda r: order.index(r["fault"]))
        blocks["network"] = table(rows)
    if results.get("soak"):
        blocks["soak"] = _soak_block(results["soak"])
    for name, body in blocks.items():
        pattern = re.compile(rf"(<!-- {name}:begin -->\n).*?(<!-- {name}:end -->)", re.S)
        text = pattern.sub(lambda m, b=body: m.group(1) + b + "\n" + m.group(2), text)
    DOCS.write_text(text)


def save(results: dict[str, Any]) -> None:
    """Store the results and regenerate the docs."""
    RESULTS.write_text(json.dumps(results, indent=1))
    regenerate(results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--records", type=int, default=None, help="default 1,000,000 (--network: 50,000)"
    )
    parser.add_argument("--guarantee", choices=[*GUARANTEES, "all"], default="all")
    parser.add_argument(
        "--rate", type=float, default=None, help="source records/s (default 10,000; soak 2,000)"
    )
    parser.add_argument(
        "--soak-seconds", type=float, default=0.0, help="run the soak mode for S seconds instead"
    )
    parser.add_argument("--warmup", type=float, default=15.0, help="soak warm-up, not reported")
    parser.add_argument(
        "--network", action="store_true", help="run the network-fault matrix instead"
    )
    parser.add_argument(
        "--fault", action="append", choices=list(FAULTS), help="--network: only these faults"
    )
    args = parser.parse_args()
    if args.network:
        sys.exit(network(args.records or 50_000, args.fault or list(FAULTS)))
    args.records = args.records or 1_000_000
    if args.rate is None:
        args.rate = 2_000.0 if args.soak_seconds else 10_000.0
    results: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    if "rows" in results.get("soak", {}):  # the single-guarantee format of an older version,
        del results["soak"]  # whose exactly_once source could not hold the offered rate
    chosen = GUARANTEES if args.guarantee == "all" else (args.guarantee,)
    with LocalCluster(nodes=3) as cluster, tempfile.TemporaryDirectory() as tmp:
        if args.soak_seconds:
            soaks: dict[str, dict[str, Any]] = {}
            for g in chosen:
                soak = run_soak(
                    cluster, g, args.soak_seconds, args.rate, Path(tmp), warmup=args.warmup
                )
                soaks[g] = {"rate": int(args.rate), "seconds": args.soak_seconds, **soak}
                soaks[g]["warmup"] = args.warmup
            results["soak"] = soaks
            _plot(soaks, DOCS.with_name("reliability-soak.png"))
        else:
            for g in chosen:
                result = run_pipeline(cluster, g, args.records, Path(tmp), rate=args.rate)
                key = f"{g} {args.records}"  # one row per guarantee and size
                results.setdefault("pipeline", {})[key] = result.as_dict()
                save(results)
    save(results)
    print(_table(results))


def network(records: int, faults: list[str]) -> int:
    """Run the network-fault matrix, store it, regenerate its table; 1 if anything broke."""
    found = run_matrix(records, faults)
    results: dict[str, Any] = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    for r in found:
        results.setdefault("network", {})[r["fault"]] = r
    save(results)
    broken = [r["fault"] for r in found if "error" in r] + [
        f"{r['fault']} {f['name']}"
        for r in found
        if "error" not in r
        for f in r["front_ends"]
        if violations(f)
    ]
    print("every guarantee held" if not broken else f"broken: {', '.join(broken)}")
    return 1 if broken else 0


if __name__ == "__main__":
    main()
