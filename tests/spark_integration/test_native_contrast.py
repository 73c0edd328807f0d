"""Contrast: Spark's native Kafka sink on the same workload under the same failures
(attempt 0 of partitions 1 and 3 fails after 3,000 records; the driver is SIGKILLed with two
tasks blocked at offset 6,000, then the job is re-run). Its duplicates are counted, not hidden."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.spark_integration._support import (
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


def test_native_sink_duplicates_under_the_same_failures(
    kafka_cluster: Any, make_topic: Any, make_group: Any, tmp_path: Path
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(PARTS), make_topic(PARTS), make_group()
    seed(bs, src, N)
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    args: dict[str, Any] = {
        "mode": "native",
        "bs": bs,
        "src": src,
        "dst": dst,
        "group": group,
        "fail_partitions": [1, 3],
        "fail_after": 3_000,
    }
    proc = start_driver(dict(args, block_at=6_000, block_dir=str(blocked)), tmp_path / "run1.log")
    try:
        wait_for(
            lambda: len(list(blocked.iterdir())) >= 2 or proc.poll() is not None,
            240,
            "two tasks blocked",
        )
        assert proc.poll() is None, (tmp_path / "run1.log").read_text()[-3000:]
    finally:
        kill_group(proc)
    out = run_driver(args, tmp_path / "run2.log")
    v = verdict(read_values(bs, dst), N)
    print(f"\nSpark native Kafka sink (re-run {out['seconds']:.1f}s): {v}")
    assert v.missing == 0 and v.foreign == 0
    assert v.duplicates > 0  # at-least-once: the failed attempts and the killed run repeat
