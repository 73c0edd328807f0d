"""The consumer crash scenario, shared by the sync and asyncio consumer crash tests.

A worker process (``tests.sdk.consumer.crash_worker``) is SIGKILLed mid-handling at
deterministic ledger thresholds and once more at an unchosen point, then restarted; what it
handled is counted in an SQLite ledger, not by the SDK.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

from tests.sdk.consumer._support import Ledger, Worker, committed, seed, wait_for

N = 10_000
PARTS = 3
FREE_KILL_AT = 8_500
# Kill points are random but reproducible: set CONSUMER_CRASH_SEED to replay a run.
SEED = int(os.environ.get("CONSUMER_CRASH_SEED", random.SystemRandom().randrange(10**6)))


def block_points(seed: int) -> list[list[Any]]:
    """Three ledger thresholds (>= 1,000 apart, below FREE_KILL_AT), each before/after a write."""
    rng = random.Random(seed)
    thresholds = sorted(rng.sample(range(1_000, FREE_KILL_AT - 1_000, 1_000), 3))
    return [[t + rng.randrange(500), rng.choice(["before", "after"])] for t in thresholds]


def crash_run(
    bs: str, topic: str, group: str, guarantee: str, tmp: Path, **extra: Any
) -> tuple[dict[int, int], int, list[int], list[list[Any]]]:
    """Run the scenario; return (ledger counts, kills, committed offsets, block points)."""
    seed(bs, topic, N)
    block_at = block_points(SEED)
    print(f"[{guarantee}] CONSUMER_CRASH_SEED={SEED} block_at={block_at}")
    ledger_path = tmp / f"{guarantee}.db"
    ledger = Ledger(ledger_path)  # creates the table before the first worker starts
    args = {
        "bootstrap": bs,
        "topic": topic,
        "group": group,
        "guarantee": guarantee,
        "ledger": str(ledger_path),
        "markers": str(tmp),
        "block_at": block_at,
        "instance": f"{group}-w",
        "idle_timeout_s": 4.0,
        "auto_commit_interval_ms": 200,
        # from 8,000 rows on ~500 records/s, so the unchosen kill at 8,500 lands mid-topic
        "delay_s": 0.002,
        "slow_from": FREE_KILL_AT - 500,
        **extra,
    }
    kills = 0
    worker = Worker(**args)
    try:
        for threshold, where in block_at:
            marker = tmp / f"blocked-{threshold}"
            wait_for(marker.exists, 120, f"the handler to block at {threshold} ({where})")
            time.sleep(0.5)  # > auto.commit.interval.ms: the timer commits what was stored
            worker.kill()
            kills += 1
            print(
                f"[{guarantee}] SIGKILL #{kills} blocked {where} ledger write, "
                f"rows={ledger.rows()} committed={committed(bs, group, topic, PARTS)}"
            )
            worker = Worker(**args)
        wait_for(lambda: ledger.rows() >= FREE_KILL_AT, 120, f"{FREE_KILL_AT} ledger rows")
        worker.kill()
        kills += 1
        print(
            f"[{guarantee}] SIGKILL #{kills} at an unchosen point, rows={ledger.rows()} "
            f"committed={committed(bs, group, topic, PARTS)}"
        )
        worker = Worker(**args)
        assert worker.wait(180) == 0  # idle after the end of the topic: clean exit
    finally:
        worker.terminate()
    counts = ledger.counts()
    ledger.close()
    return counts, kills, committed(bs, group, topic, PARTS), block_at


def check(
    guarantee: str,
    counts: dict[int, int],
    kills: int,
    offsets: int,
    block_at: list[list[Any]],
    started: float,
) -> None:
    """The guarantee's assertions on a crash run's ledger."""
    handled = sum(counts.values())
    distinct = len(counts)
    lost = N - distinct
    duplicates = handled - distinct
    twice = sum(1 for c in counts.values() if c > 1)
    print(
        f"[{guarantee}] N={N} kills={kills} handlings={handled} distinct={distinct} "
        f"lost={lost} duplicate_handlings={duplicates} records_handled_twice_or_more={twice} "
        f"committed={offsets} wall={time.monotonic() - started:.1f}s"
    )
    assert kills >= 3
    assert offsets == N  # the last run consumed and committed the whole topic
    assert set(counts) <= set(range(N))
    if guarantee == "at_most_once":
        assert duplicates == 0, f"{twice} records handled more than once"
    else:
        assert lost == 0, f"{lost} records never handled"
        # a kill blocked after its ledger write repeats at least that (handled, unstored) record
        assert duplicates >= sum(1 for _, where in block_at if where == "after")
