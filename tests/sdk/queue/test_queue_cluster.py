"""A queue on 3 nodes: a broker bounce during consumption loses nothing at_least_once."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest

from sdk.queue import QueueConsumer
from sdk.records import ConsumerRecord
from sdk.testing.pytest_plugin import require_local
from tests.sdk.processor._support import wait_for
from tests.sdk.queue._support import queue_profile, seed_in_small_batches

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

N = 10_000


def test_a_broker_bounce_during_consumption_loses_nothing_at_least_once(
    kafka_cluster3: Any, make_topic: Any, make_group: Any
) -> None:
    cluster = require_local(kafka_cluster3)
    bs = cluster.bootstrap_servers
    topic = make_topic(2, cluster=kafka_cluster3, replication_factor=3)
    group = make_group()
    seed_in_small_batches(bs, topic, N)
    handled: Counter[int] = Counter()
    lock = threading.Lock()
    errors: list[BaseException] = []

    def handler(record: ConsumerRecord) -> None:
        time.sleep(0.0005)
        with lock:
            handled[int(record.value)] += 1

    queues = [QueueConsumer(queue_profile(bs, "at_least_once", group), [topic]) for _ in range(2)]

    def work(queue: QueueConsumer) -> None:
        try:
            queue.run(handler)
        except BaseException as exc:  # surfaced by the test below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(q,), daemon=True) for q in queues]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: sum(handled.values()) >= N * 0.3, 120, "30% handled")
        victim = cluster.leader_of(topic, 0)
        started = time.monotonic()
        cluster.stop(victim)
        cluster.restart(victim)
        bounce_s = time.monotonic() - started
        wait_for(lambda: len(handled) >= N or bool(errors), 240, "every record handled")
    finally:
        for q in queues:
            q.stop()
        for t in threads:
            t.join(60)
        for q in queues:
            q.close()
    assert not errors, errors
    lost = N - len(handled)
    duplicated = sum(c - 1 for c in handled.values() if c > 1)
    stats = [q.stats for q in queues]
    print(
        f"broker bounce (node {victim}, {bounce_s:.1f}s): {N:,} records, lost {lost}, "
        f"duplicated {duplicated}; released {sum(s.released for s in stats)}, "
        f"ack failures {sum(s.ack_failures for s in stats)}"
    )
    assert lost == 0
