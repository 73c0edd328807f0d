"""The network-fault matrix: ``./dev.sh reliability --network [--records N] [--fault F ...]``.

Every fault of tests/reliability/_network_cases.py, held for its matrix duration (cuts and the
black hole 30 s, latency and resets 60 s, the dropped commit answer 20 s), against the
exactly-once Processor and every client of tests/reliability/_clients.py at once (the
dropped commit answer: the at-most-once Consumer), each copying the same ``records`` input
records (default 50,000 per cell). One 3-node cluster with a proxy before each broker serves
every case. A case fails when a guarantee breaks (:func:`violations`) or a client is wedged
(no progress on every partition within 120 s of the heal); the others are still run, and
every result is stored.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdk.testing.cluster import LocalCluster
from tests.reliability._network import FrontEnd, NetworkCase, warm_up
from tests.reliability._network_cases import FAULTS

NAMES = {
    "processor": "Processor",
    "consumer": "Consumer",
    "consumer_amo": "Consumer",
    "queue": "queue",
    "queue_tuned": "queue, `socket.timeout.ms` 5000",
    "sink": "database sink (SQLite)",
}
PROMISE = {"exactly_once": ("lost", "duplicated"), "at_least_once": ("lost",)}
PROMISE["at_most_once"] = ("duplicated",)


def violations(front: dict[str, Any]) -> list[str]:
    """What a front end's result breaks of its guarantee (empty: it held)."""
    broken = [f"{what} {front[what]}" for what in PROMISE[front["guarantee"]] if front[what]]
    if front["name"] == "processor" and front.get("out_of_order"):
        broken.append(f"out of order {front['out_of_order']}")
    return broken


def run_matrix(
    records: int, faults: list[str], log: Callable[[str], None] = print
) -> list[dict[str, Any]]:
    """Run the chosen faults; one result (``CaseResult.as_dict`` or an error) per fault."""
    results: list[dict[str, Any]] = []
    with LocalCluster(3, network_faults=True) as cluster, tempfile.TemporaryDirectory() as tmp:
        assert cluster.network is not None
        log(f"toxiproxy server and proxies started in {cluster.network.start_duration_s:.3f}s")
        warm_up(cluster)
        for fault in faults:
            kind = FAULTS[fault]
            work = Path(tmp) / fault
            work.mkdir()
            started = time.monotonic()
            log(f"[{fault}] {records:,} records, fault held {kind.matrix_seconds:g}s ...")
            case = NetworkCase(
                cluster,
                work,
                fault,
                kind.matrix_seconds,
                clients=kind.matrix_clients,
                records=records,
                worker_extra=kind.worker_extra,
                log=lambda line: None,  # the case's own lines are long; the summary follows
            )
            try:
                result = case.run(kind.inject).as_dict()
            except Exception as exc:  # a wedged client or a failed step: keep the others going
                result = {"fault": fault, "records": records, "error": f"{exc}"[:2000]}
                cluster.network.heal()
            result["wall_s"] = round(time.monotonic() - started, 1)
            results.append(result)
            log(summary(result))
    return results


def summary(result: dict[str, Any]) -> str:
    """One line per front end of a case."""
    if "error" in result:
        return f"[{result['fault']}] FAILED: {result['error'][:400]}"
    lines = [f"[{result['fault']}] {result['wall_s']:.0f}s"]
    for f in result["front_ends"]:
        broken = violations(f)
        lines.append(
            f"  {f['name']:<13} {f['guarantee']:<14} lost {f['lost']:>6,} dup "
            f"{f['duplicated']:>6,}  recovery {f['first_progress_s']}/{f['recovery_s']} s  "
            + ("VIOLATED: " + ", ".join(broken) if broken else "held")
        )
    return "\n".join(lines)


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:g} s"


def table(results: list[dict[str, Any]]) -> str:
    """The matrix for docs/reliability.md: one row per fault and front end."""
    out = [
        "| fault | held | front end | guarantee | records | lost | duplicated "
        "| progress during the fault | first progress after the heal | every partition again "
        "| what the client counted |",
        "|" + " --- |" * 11,
    ]
    for r in results:
        if "error" in r:
            out.append(
                f"| {r['fault']} | | **failed** | | {r['records']:,} | | | | | | "
                f"{r['error'][:300]} |"
            )
            continue
        for i, f in enumerate(r["front_ends"]):
            front = FrontEnd(**f)
            fault, held = (r["fault"], f"{r['fault_s']:g} s") if i == 0 else ("", "")
            counted = ", ".join(f"{k} {v:,}" for k, v in sorted(front.counters.items()) if v)
            out.append(
                f"| {fault} | {held} | {NAMES[front.name]} | {front.guarantee} | {front.records:,} "
                f"| **{front.lost:,}** | **{front.duplicated:,}** | {front.during_fault:,} "
                f"| {_seconds(front.first_progress_s)} | {_seconds(front.recovery_s)} "
                f"| {counted} |"
            )
    return "\n".join(out)
