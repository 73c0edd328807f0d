"""Processor.run(concurrency=N) on the broker: exactly_once output, key order, dead letters."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest

from sdk.processor import OutputRecord, Processor
from tests.sdk.processor._support import committed_total, seed, verify
from tests.sdk.processor.test_inprocess import eos_profile

pytestmark = pytest.mark.broker

PARTS = 4


def _run(proc: Processor, handler: Any, done: Any, timeout: float = 90, **kw: Any) -> Any:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["stats"] = proc.run(handler, **kw)
        except BaseException as exc:
            box["error"] = exc

    t = threading.Thread(target=target)
    t.start()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and t.is_alive() and not done():
        time.sleep(0.2)
    proc.stop()
    t.join(60)
    if "error" in box:
        raise box["error"]
    return box["stats"]


def test_exactly_once_copy_on_16_threads_keeps_each_keys_order(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(PARTS), make_topic(PARTS), make_group()
    n = 4_000
    seed(bs, src, n, keys=400)
    lock = threading.Lock()
    active: Counter[Any] = Counter()
    overlaps: list[Any] = []
    now = peak = 0

    def handler(record: Any) -> list[OutputRecord]:
        nonlocal now, peak
        key = (record.partition, record.key)
        with lock:
            active[key] += 1
            if active[key] > 1:
                overlaps.append(key)
            now += 1
            peak = max(peak, now)
        time.sleep(0.002)  # an I/O call
        with lock:
            active[key] -= 1
            now -= 1
        return [OutputRecord(topic=dst, key=record.key, value=record.value)]

    proc = Processor(eos_profile(bs, group), [src], instance_id="p0")
    stats = _run(proc, handler, lambda: committed_total(bs, group, src, PARTS) >= n, concurrency=16)
    v = verify(bs, dst, PARTS, n)
    assert (v.count, v.duplicates, v.missing, v.order_violations) == (n, 0, 0, 0)
    assert overlaps == []
    assert peak > PARTS  # more than one record per partition at once
    assert stats.records_in == n


def test_a_failing_record_is_dead_lettered_inside_the_transaction(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, dlq, group = make_topic(PARTS), make_topic(PARTS), make_topic(1), make_group()
    n = 1_000
    seed(bs, src, n, keys=100)

    def handler(record: Any) -> list[OutputRecord]:
        if int(record.value) % 250 == 7:
            raise ValueError("bad record")
        return [OutputRecord(topic=dst, key=record.key, value=record.value)]

    prof = eos_profile(
        bs,
        group,
        failure={"attempts": 2, "backoff_initial_ms": 1, "on_failure": "dlq", "dlq_topic": dlq},
    )
    proc = Processor(prof, [src], instance_id="p0")
    stats = _run(proc, handler, lambda: committed_total(bs, group, src, PARTS) >= n, concurrency=8)
    bad = {i for i in range(n) if i % 250 == 7}
    v = verify(bs, dst, PARTS, n)
    assert v.duplicates == 0 and v.order_violations == 0
    assert set(range(n)) - {x for vals in v.values.values() for x in vals} == bad
    assert stats.dead_lettered == len(bad) and stats.handler_failures == len(bad)
    dead = verify(bs, dlq, 1, 0)
    assert dead.count == len(bad) and dead.duplicates == 0


def test_a_handler_stuck_past_the_timeout_is_dead_lettered_in_the_transaction(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, dlq, group = make_topic(PARTS), make_topic(PARTS), make_topic(1), make_group()
    n = 400
    seed(bs, src, n, keys=40)
    forever = threading.Event()

    def handler(record: Any) -> list[OutputRecord]:
        if record.value == b"10":
            forever.wait()  # stuck: given up after handler_timeout_s
        return [OutputRecord(topic=dst, key=record.key, value=record.value)]

    prof = eos_profile(bs, group, failure={"attempts": 3, "on_failure": "dlq", "dlq_topic": dlq})
    proc = Processor(prof, [src], instance_id="p0")
    try:
        stats = _run(
            proc,
            handler,
            lambda: committed_total(bs, group, src, PARTS) >= n,
            concurrency=4,
            handler_timeout_s=1.0,
        )
    finally:
        forever.set()
    v = verify(bs, dst, PARTS, n)
    assert v.duplicates == 0 and v.order_violations == 0
    assert set(range(n)) - {x for vals in v.values.values() for x in vals} == {10}
    assert stats.dead_lettered == 1 and stats.handler_failures == 1
    dead = verify(bs, dlq, 1, 0)
    assert dead.count == 1 and dead.values and 10 in next(iter(dead.values.values()))
