"""run_batch(concurrency=N) with a scripted client: sub-batches by key, at the same time."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from sdk.consumer import Consumer, ConsumerRecord
from sdk.errors import HandlerError
from sdk.profiles import ConsumerProfile
from sdk.testing.fakes import FakeConsumerClient, FakeMessage


def _client(n: int, keys: int) -> FakeConsumerClient:
    batch = [
        FakeMessage("t", i % 2, i // 2, str(i).encode(), key=f"k{i % keys}".encode())
        for i in range(n)
    ]
    return FakeConsumerClient(batches=[batch], assign_on_subscribe=[("t", 0), ("t", 1)])


def _profile(**failure: Any) -> ConsumerProfile:
    return ConsumerProfile(
        guarantee="at_least_once",
        bootstrap_servers="unused:1",
        group_id="g",
        failure=failure or {"attempts": 1, "on_failure": "stop"},
    )


def test_each_key_in_one_sub_batch_in_order_and_sub_batches_at_once() -> None:
    client = _client(40, 8)
    calls: list[list[tuple[int, bytes | None, int]]] = []
    lock = threading.Lock()
    now = peak = 0

    def handler(records: list[ConsumerRecord]) -> None:
        nonlocal now, peak
        with lock:
            now += 1
            peak = max(peak, now)
            calls.append([(r.partition, r.key, r.offset) for r in records])
        time.sleep(0.05)
        with lock:
            now -= 1

    with Consumer(_profile(), ["t"], client_factory=lambda cfg: client) as consumer:
        stats = consumer.run_batch(handler, concurrency=4, max_records=40, idle_timeout_s=5)
    assert peak > 1  # sub-batches ran at the same time
    assert 1 < len(calls) <= 4
    owner: dict[tuple[int, bytes | None], int] = {}
    for i, call in enumerate(calls):
        for p, k, _ in call:
            assert owner.setdefault((p, k), i) == i  # one key's records in one sub-batch
        for p in (0, 1):
            offsets = [o for q, _, o in call if q == p]
            assert offsets == sorted(offsets)
    assert sum(len(c) for c in calls) == 40 and stats.handled == 40
    assert sorted(client.stored)[-2:] == [("t", 0, 20), ("t", 1, 20)]


def test_a_sub_batch_that_fails_for_good_stores_nothing_of_the_batch() -> None:
    client = _client(40, 8)

    def handler(records: list[ConsumerRecord]) -> None:
        if any(r.key == b"k3" for r in records):
            raise ValueError("bad")

    with (
        Consumer(_profile(), ["t"], client_factory=lambda cfg: client) as consumer,
        pytest.raises(HandlerError),
    ):
        consumer.run_batch(handler, concurrency=4, max_records=40, idle_timeout_s=5)
    assert client.stored == []
    assert sorted(client.seeks) == [("t", 0, 0), ("t", 1, 0)]  # the batch is read again
