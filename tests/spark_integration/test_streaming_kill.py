"""Acceptance: the foreachBatch sink; the streaming driver is SIGKILLed mid-batch (three slices
of batch 2 committed, one blocked with records in its open transaction) and restarted from the
checkpoint: Spark replays batch 2, the committed slices are skipped, 0 duplicates, 0 missing."""

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

N = 12_000
PARTS = 4
PER_BATCH = 4_000  # maxOffsetsPerTrigger: ~1,000 offsets per partition per batch


def test_streaming_sink_survives_a_driver_kill_mid_batch(
    kafka_cluster: Any, make_topic: Any, make_group: Any, tmp_path: Path
) -> None:
    bs = require_local(kafka_cluster).bootstrap_servers
    src, dst, progress = make_topic(PARTS), make_topic(PARTS), make_topic(1)
    group = make_group()
    seed(bs, src, N, transactional=True)  # markers and aborted records in the input
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    args: dict[str, Any] = {
        "mode": "stream",
        "bs": bs,
        "src": src,
        "dst": dst,
        "group": group,
        "job": "sink",
        "prefix": f"{group}-",
        "progress_topic": progress,
        "per_batch": PER_BATCH,
        "checkpoint": str(tmp_path / "checkpoint"),
    }
    # Run 1: in batch 2 the slice reading input partition 1 blocks after producing its first
    # 500-row chunk (its transaction stays open); the other three slices commit.
    run1 = dict(
        args,
        block_batch=2,
        block_partitions=[1],
        block_dir=str(blocked),
        block_at=0,
        block_after=600,
    )
    proc = start_driver(run1, tmp_path / "run1.log")
    try:
        wait_for(
            lambda: (blocked / "blocked-1").exists() or proc.poll() is not None,
            180,
            "a slice of batch 2 blocked",
        )
        assert proc.poll() is None, (tmp_path / "run1.log").read_text()[-3000:]
        wait_for(
            lambda: sorted(committed(bs, "sink.progress", progress, PARTS)).count(3) == 3,
            60,
            "three slices of batch 2 committed",
        )
        markers = committed(bs, "sink.progress", progress, PARTS)
    finally:
        kill_group(proc)
    print(f"\nrun 1 killed in batch 2; markers (batch id + 1 per slice): {markers}")
    assert sorted(markers) == [2, 3, 3, 3]

    out = run_driver(args, tmp_path / "run2.log")
    history = out["history"]
    replay = history[0]
    print(
        "run 2 batches:",
        [[(s["slice_index"], s["skipped"], s["records_out"]) for s in b] for b in history],
    )
    assert {s["batch_id"] for s in replay} == {2}
    assert sorted(s["skipped"] for s in replay) == [False, True, True, True]

    v = verdict(read_values(bs, dst), N)
    print(f"streaming sink: {v}")
    assert (v.count, v.duplicates, v.missing, v.foreign) == (N, 0, 0, 0)
