"""Queue cases: the SDK QueueConsumer vs a raw confluent-kafka ShareConsumer vs the SDK Consumer.

Every case reads the same pre-filled 4-partition topic with 1 or 4 worker processes (fork) and
the same per-record handler; the clock starts at the first record any worker handles and stops
when the workers together have handled N records. at_least_once everywhere: the raw peer is
what a competent user writes (explicit mode, ``acknowledge`` after the handler, the
acknowledgements sent with the next poll); the classic Consumer is the other model, which can
use at most one worker per partition.
"""

from __future__ import annotations

import multiprocessing
import time
import uuid
from typing import Any

from benchmarks._consumers import handler
from benchmarks._harness import Result, sdk_consumer_fields

GROUP = "queue"
_CASES = {
    "raw": "raw confluent-kafka ShareConsumer (explicit acks)",
    "sdk": "SDK QueueConsumer at_least_once",
    "group": "SDK Consumer at_least_once (consumer group)",
}


def label(kind: str, workers: int) -> str:
    """The case name of ``kind`` with ``workers`` workers."""
    return f"{_CASES[kind]}, {workers} worker{'s' if workers > 1 else ''}"


def _work(
    kind: str, bs: str, topic: str, group: str, me: int, counts: Any, firsts: Any, done: Any
) -> None:
    started = False

    def handle(record: Any) -> None:
        # each worker counts in its own shared slot (one writer, no lock): a shared counter
        # behind a lock cost every record of every kind a cross-process lock, and with 4
        # workers it capped them all near 1M records/s (the consumer group: 980k with 1 worker,
        # 990k with 4), so the 4-worker rows measured the lock
        nonlocal started
        handler(record)
        if not started:
            firsts[me] = time.perf_counter()
            started = True
        counts[me] += 1

    if kind == "raw":
        from confluent_kafka import ShareConsumer

        c = ShareConsumer(
            {"bootstrap.servers": bs, "group.id": group, "share.acknowledgement.mode": "explicit"}
        )
        c.subscribe([topic])
        while not done.is_set():
            for m in c.poll(0.2):
                if m.error() is None:
                    handle(m)
                    c.acknowledge(m)
        c.close()
        return
    if kind == "sdk":
        from sdk.profiles import QueueProfile
        from sdk.queue import QueueConsumer

        profile = QueueProfile(
            guarantee="at_least_once", bootstrap_servers=bs, group_id=group, poll_timeout_ms=200
        )
        with QueueConsumer(profile, [topic], telemetry=False) as queue:
            while not done.is_set():
                queue.run(handle, idle_timeout_s=0.5)
        return
    from sdk.consumer import Consumer
    from sdk.profiles import ConsumerProfile

    cp = ConsumerProfile(
        guarantee="at_least_once",
        bootstrap_servers=bs,
        group_id=group,
        **sdk_consumer_fields(),
    )
    with Consumer(cp, [topic], telemetry=False) as consumer:
        while not done.is_set():
            consumer.run(handle, idle_timeout_s=0.5)


def queue_case(bs: str, topic: str, n: int, size: int, kind: str, workers: int) -> Result:
    """``workers`` processes of ``kind`` share ``topic``; records/s until N are handled."""
    if kind != "group":  # a new share group starts at 'latest' unless told otherwise
        from sdk.profiles import QueueProfile
        from sdk.queue import apply_group_config

        group = f"bench-q-{uuid.uuid4().hex[:8]}"
        apply_group_config(
            QueueProfile(guarantee="at_least_once", bootstrap_servers=bs, group_id=group)
        )
    else:
        group = f"bench-g-{uuid.uuid4().hex[:8]}"
    ctx = multiprocessing.get_context("fork")
    counts, firsts = ctx.Array("q", workers, lock=False), ctx.Array("d", workers, lock=False)
    done = ctx.Event()
    procs = [
        ctx.Process(target=_work, args=(kind, bs, topic, group, me, counts, firsts, done))
        for me in range(workers)
    ]
    for p in procs:
        p.start()
    deadline = time.monotonic() + 300
    while sum(counts) < n and time.monotonic() < deadline:
        time.sleep(0.005)
    ended, handled = time.perf_counter(), sum(counts)
    done.set()
    for p in procs:
        p.join(60)
        if p.is_alive():
            p.kill()
    started = [t for t in firsts if t]
    seconds = ended - min(started) if started else 0.0
    return Result(GROUP, label(kind, workers), size, min(handled, n), seconds)
