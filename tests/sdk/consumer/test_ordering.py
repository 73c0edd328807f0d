"""Commit ordering proven on the broker: a second client reads the committed offsets while the
handler is blocked (at_most_once: already committed; at_least_once: only what was handled)."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from sdk.consumer import Consumer, ConsumerRecord
from tests.sdk.consumer._support import Ledger, Worker, committed, profile, wait_for

pytestmark = pytest.mark.broker

NONE = -1001  # librdkafka's OFFSET_INVALID: nothing committed


class Blocker:
    """A handler that blocks on one offset until released, recording what it saw."""

    def __init__(self, block_offset: int, pace_s: float = 0.0) -> None:
        self.block_offset = block_offset
        self.pace_s = pace_s  # time each record before the blocked one takes
        self.seen: list[int] = []
        self.blocked = threading.Event()
        self.release = threading.Event()

    def __call__(self, record: ConsumerRecord) -> None:
        if record.offset == self.block_offset:
            self.blocked.set()
            assert self.release.wait(60)
        elif self.pace_s and record.offset < self.block_offset:
            time.sleep(self.pace_s)
        self.seen.append(record.offset)


@contextmanager
def background(
    consumer: Consumer, handler: Any, *, stop: bool = False, **kw: Any
) -> Iterator[list[BaseException]]:
    """Run ``consumer.run(handler, **kw)`` in a thread; on exit release, join and close."""
    errors: list[BaseException] = []

    def target() -> None:
        try:
            consumer.run(handler, **kw)
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    try:
        yield errors
    finally:
        if isinstance(handler, Blocker):
            handler.release.set()
        if stop:
            consumer.stop()
        thread.join(30)
        consumer.close()
    assert errors == []


def test_at_most_once_commits_the_batch_before_the_handler_runs(seeded: Any) -> None:
    bs, topic, group = seeded(50)
    handler = Blocker(block_offset=0)  # the very first handler call blocks
    consumer = Consumer(profile(bs, "at_most_once", group, batch_size=20), [topic])
    with background(consumer, handler, max_records=20, idle_timeout_s=30):
        assert handler.blocked.wait(30)
        polled = consumer.stats.polled
        # no handler has returned yet, and the whole polled batch is committed
        assert handler.seen == []
        assert polled >= 1
        assert committed(bs, group, topic) == [polled]
    assert handler.seen == list(range(20))
    assert committed(bs, group, topic) == [20]


def test_at_least_once_stores_only_after_the_handler(seeded: Any) -> None:
    bs, topic, group = seeded(50)
    # records 0-4 take 5 ms each: the hot loop stores the handled prefix once a store is
    # STORE_EVERY_S (1 ms) old, not after each record of a fast handler, so a
    # handler this slow has each offset stored before the next record is handled
    handler = Blocker(block_offset=5, pace_s=0.005)
    prof = profile(bs, "at_least_once", group, batch_size=20, auto_commit_interval_ms=100)
    consumer = Consumer(prof, [topic])
    with background(consumer, handler, max_records=20, idle_timeout_s=30):
        assert handler.blocked.wait(30)
        # the timer commits the stored offsets of records 0..4, never the blocked one
        wait_for(lambda: committed(bs, group, topic) == [5], 10, "offset 5 committed", 0.1)
        time.sleep(0.5)  # five more timer periods
        assert committed(bs, group, topic) == [5]
        assert consumer.stats.polled >= 6  # the batch holds more than was handled
    assert committed(bs, group, topic) == [20]


@pytest.mark.parametrize(
    "group",
    [
        {},  # classic protocol, eager range assignor
        {"assignor": "cooperative_sticky"},  # incremental revoke
        {"group_protocol": "consumer"},  # KIP-848
    ],
    ids=["eager", "cooperative", "kip848"],
)
def test_at_least_once_commits_on_revoke(group: dict[str, str], seeded: Any) -> None:
    bs, topic, group_id = seeded(40, 2)
    # the timer never fires during the test: only the revoke callback can commit
    prof = profile(bs, "at_least_once", group_id, auto_commit_interval_ms=600_000, **group)
    first = Consumer(prof, [topic])
    handled: list[int] = []
    second = Consumer(prof, [topic])
    with background(first, lambda r: handled.append(r.offset), stop=True, idle_timeout_s=60):
        wait_for(lambda: len(handled) == 40, 30, "the first member to handle everything")
        time.sleep(0.5)
        assert committed(bs, group_id, topic, 2) == [NONE, NONE]
        # a second member joins: the first one's partitions are revoked, and it commits
        second.run(lambda r: None, idle_timeout_s=3)
        assert first.stats.revoked >= 1
        assert sum(committed(bs, group_id, topic, 2)) == 40
        assert second.stats.polled == 0  # nothing handled twice
    second.close()


def test_iterator_ack_stores_the_acknowledged_prefix(seeded: Any) -> None:
    bs, topic, group = seeded(10)
    prof = profile(bs, "at_least_once", group)
    with Consumer(prof, [topic], value_deserializer="str") as consumer:
        records = list(consumer.records(max_records=10, idle_timeout_s=30))
        assert [r.value for r in records] == [str(i) for i in range(10)]
        for r in reversed(records):  # out of order, and record 3 never acknowledged
            if r.offset != 3:
                consumer.ack(r)
    assert committed(bs, group, topic) == [3]
    with Consumer(prof, [topic]) as again:
        first = next(iter(again))
        assert first.offset == 3  # the unacknowledged record is delivered again
        again.ack(first)
        again.stop()


def test_iterator_at_most_once_commits_before_yielding(seeded: Any) -> None:
    bs, topic, group = seeded(10)
    with Consumer(profile(bs, "at_most_once", group), [topic]) as consumer:
        records = consumer.records(max_records=10, idle_timeout_s=30)
        record = next(records)
        assert record.offset == 0
        assert committed(bs, group, topic) == [consumer.stats.polled]  # before it was handed out
        records.close()  # the rest of the committed batch is abandoned: at-most-once loses it
        assert consumer.stats.abandoned == consumer.stats.polled - 1


def test_sigterm_stops_gracefully_and_commits_what_was_handled(seeded: Any, tmp_path: Path) -> None:
    bs, topic, group = seeded(2_000, 2)
    ledger_path = tmp_path / "ledger.db"
    ledger = Ledger(ledger_path)
    worker = Worker(
        bootstrap=bs,
        topic=topic,
        group=group,
        guarantee="at_least_once",
        ledger=str(ledger_path),
        markers=str(tmp_path),
        delay_s=0.002,
        auto_commit_interval_ms=600_000,  # only the graceful stop can commit
        idle_timeout_s=60,
    )
    try:
        wait_for(lambda: ledger.rows() >= 200, 60, "200 records handled")
        os.kill(worker.proc.pid, signal.SIGTERM)
        assert worker.wait(30) == 0
    finally:
        worker.terminate()
    rows, counts = ledger.rows(), ledger.counts()
    ledger.close()
    offsets = committed(bs, group, topic, 2)
    print(f"[sigterm] handled {rows} of 2000 before SIGTERM; committed {offsets}")
    assert rows < 2_000 and len(counts) == rows
    assert sum(max(o, 0) for o in offsets) == rows  # exactly what was handled
