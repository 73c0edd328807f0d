"""Graceful rebalances (a member joins, a member leaves) repeat and lose nothing, either way.

The handler crawls (20 ms per record) while a gate is set, so each rebalance is sure to land
mid-stream however long the group takes: the gate is set from a third of the records until
the joining member owns partitions, and from two thirds until the leaving member is closed.
Members keep polling between batches while crawling, so the rebalances can complete.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest

from sdk.consumer import Consumer, ConsumerRecord
from tests.sdk.consumer._support import committed, profile, wait_for

pytestmark = pytest.mark.broker

N = 3_000


@pytest.mark.parametrize("guarantee", ["at_most_once", "at_least_once"])
def test_member_joins_and_leaves_mid_stream(guarantee: str, seeded: Any) -> None:
    bs, topic, group = seeded(N, 3)
    counts: Counter[int] = Counter()
    lock = threading.Lock()
    crawl = threading.Event()

    def handler(record: ConsumerRecord) -> None:
        with lock:
            counts[int(record.value)] += 1
            if len(counts) in (N // 3, 2 * N // 3):
                crawl.set()
        time.sleep(0.02 if crawl.is_set() else 0.001)

    prof = profile(bs, guarantee, group, batch_size=50)
    a, b = Consumer(prof, [topic]), Consumer(prof, [topic])
    threads = [
        threading.Thread(target=c.run, args=(handler,), kwargs={"idle_timeout_s": 60})
        for c in (a, b)
    ]
    try:
        threads[0].start()
        wait_for(crawl.is_set, 60, "a third handled by a")
        threads[1].start()  # b joins: rebalance
        wait_for(lambda: b.assignment, 60, "b to own partitions")
        joined_at = len(counts)
        crawl.clear()
        wait_for(lambda: len(counts) >= 2 * N // 3, 60, "two thirds handled")
        a.stop()  # a leaves: rebalance
        threads[0].join(30)
        a.close()
        left_at = len(counts)
        crawl.clear()
        wait_for(lambda: len(counts) == N, 60, "every record handled")
    finally:
        for c in (a, b):
            c.stop()
        for t in threads:
            t.join(30)
        for c in (a, b):
            c.close()
    twice = sum(1 for n in counts.values() if n > 1)
    print(
        f"[{guarantee}] b joined at {joined_at}, a left at {left_at}; a handled "
        f"{a.stats.handled} (revoked {a.stats.revoked}), b handled {b.stats.handled}; "
        f"handled twice: {twice}"
    )
    assert joined_at < 2 * N // 3 and left_at < N  # both rebalances mid-stream
    assert a.stats.revoked >= 1 and b.stats.handled > 0
    assert twice == 0 and set(counts) == set(range(N))
    assert sum(committed(bs, group, topic, 3)) == N
