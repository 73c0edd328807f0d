"""Acceptance: 100,000 records, 4 partitions, injected task failures, a driver SIGKILLed
mid-job and re-run: the read_committed output has 0 duplicates and 0 missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sdk.testing.pytest_plugin import require_local
from tests.spark_integration._support import (
    committed,
    kill_group,
    read_values,
    run_driver,
    seed,
    start_driver,
    verdict,
    wait_for,
)

pytestmark = [pytest.mark.spark, pytest.mark.broker, pytest.mark.slow]

N = 100_000
PARTS = 4
CHUNK = 5_000
FAIL_AFTER = 3_000


def _args(bs: str, src: str, dst: str, group: str, tmp_path: Path, **more: Any) -> dict[str, Any]:
    return {
        "mode": "batch",
        "bs": bs,
        "src": src,
        "dst": dst,
        "group": group,
        "job": "copy",
        "prefix": f"{group}-",
        "chunk": CHUNK,
        "fail_partitions": [1, 3],
        "fail_after": FAIL_AFTER,
        **more,
    }


def test_batch_job_exactly_once_under_task_failures_and_a_driver_kill(
    kafka_cluster: Any, make_topic: Any, make_group: Any, tmp_path: Path
) -> None:
    cluster = require_local(kafka_cluster)
    bs = cluster.bootstrap_servers
    src, dst, group = make_topic(PARTS), make_topic(PARTS), make_group()
    seed(bs, src, N)

    # Run 1: every task blocks (with a transaction open and records produced in it) once it
    # reaches offset CHUNK + 1,000, i.e. right after its first transaction committed. With
    # local[2] two tasks block; then the driver, its JVM and its workers are SIGKILLed.
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    args = _args(bs, src, dst, group, tmp_path, block_at=CHUNK + 1_000, block_dir=str(blocked))
    proc = start_driver(args, tmp_path / "run1.log")
    try:
        wait_for(
            lambda: len(list(blocked.iterdir())) >= 2 or proc.poll() is not None,
            130,
            "two tasks blocked",
        )
        assert proc.poll() is None, (tmp_path / "run1.log").read_text()[-3000:]
        offsets = committed(bs, group, src, PARTS)
    finally:
        kill_group(proc)
    print(
        f"\nrun 1 killed; blocked {sorted(p.name for p in blocked.iterdir())}; committed {offsets}"
    )
    done = [o for o in offsets if o > 0]
    assert sorted(done) == [CHUNK, CHUNK], offsets  # mid-way: exactly two first transactions
    assert 0 < sum(max(o, 0) for o in offsets) < N

    # Run 2: the same job (same job name and group), failures only: attempt 0 of the tasks of
    # partitions 1 and 3 raises after FAIL_AFTER records; Spark retries them (local[2,4]).
    out = run_driver(_args(bs, src, dst, group, tmp_path), tmp_path / "run2.log")
    results = {r["partition"]: r for r in out["results"]}
    print("run 2:", {p: (r["start"], r["records_in"], r["attempt"]) for p, r in results.items()})
    assert sorted(results) == list(range(PARTS))
    assert results[1]["attempt"] >= 1 and results[3]["attempt"] >= 1  # failures were injected
    assert results[0]["attempt"] == 0 and results[2]["attempt"] == 0
    for p, r in results.items():  # the re-run skipped what run 1 had committed
        assert r["start"] == max(offsets[p], 0)
    assert sum(r["records_in"] for r in results.values()) == N - sum(max(o, 0) for o in offsets)
    assert committed(bs, group, src, PARTS) == [r["end"] for _, r in sorted(results.items())]

    v = verdict(read_values(bs, dst), N)
    print(f"exactly-once batch job: {v}")
    assert (v.count, v.duplicates, v.missing, v.foreign) == (N, 0, 0, 0)

    values = [line for line in cluster.console_read_committed(dst, idle_ms=5_000) if line.isdigit()]
    print(
        f"Java ConsoleConsumer (read_committed): {len(values)} records, {len(set(values))} distinct"
    )
    assert len(values) == N and len(set(values)) == N
