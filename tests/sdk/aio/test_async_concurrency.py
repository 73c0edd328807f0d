"""AsyncConsumer.run(concurrency=N): async handlers at the same time on the loop, key order
kept, offsets for the finished prefix; a cancellation cancels every handler running."""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict
from typing import Any

import pytest

from sdk.aio import AsyncConsumer
from sdk.consumer import ConsumerRecord
from tests.sdk.consumer._support import committed, profile
from tests.sdk.processor._support import seed as seed_keys

pytestmark = pytest.mark.broker

PARTS = 4


def test_async_handlers_run_at_once_in_key_order(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(PARTS), make_group()
    seed_keys(bs, topic, 2_000, 200)
    order: dict[tuple[int, bytes | None], list[int]] = defaultdict(list)
    active: Counter[tuple[int, bytes | None]] = Counter()
    overlaps: list[Any] = []
    handled: list[int] = []
    now = peak = 0

    async def handler(record: ConsumerRecord) -> None:
        nonlocal now, peak
        key = (record.partition, record.key)
        active[key] += 1
        if active[key] > 1:
            overlaps.append(key)
        order[key].append(record.offset)
        now += 1
        peak = max(peak, now)
        await asyncio.sleep(0.005)  # an awaited I/O call
        now -= 1
        active[key] -= 1
        handled.append(int(record.value))

    async def main() -> int:
        prof = profile(bs, "at_least_once", group, auto_offset_reset="earliest")
        async with AsyncConsumer(prof, [topic], value_deserializer="str") as consumer:
            stats = await consumer.run(
                handler, concurrency=32, max_records=2_000, idle_timeout_s=20
            )
            return stats.handled

    assert asyncio.run(main()) == 2_000
    assert sorted(handled) == list(range(2_000))
    assert overlaps == []
    assert all(offsets == sorted(offsets) for offsets in order.values())
    assert peak > PARTS  # handlers of one partition ran at the same time on the loop
    assert sum(committed(bs, group, topic, PARTS)) == 2_000


def test_cancelling_the_run_cancels_the_running_handlers_and_loses_nothing(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(PARTS), make_group()
    seed_keys(bs, topic, 1_000, 500)
    handled: list[int] = []
    cancelled: list[int] = []
    running = 0

    async def slow(record: ConsumerRecord) -> None:
        nonlocal running
        running += 1
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:
            cancelled.append(int(record.value))
            raise
        finally:
            running -= 1
        handled.append(int(record.value))

    async def fast(record: ConsumerRecord) -> None:
        handled.append(int(record.value))

    async def main() -> None:
        prof = profile(bs, "at_least_once", group, auto_offset_reset="earliest")
        async with AsyncConsumer(prof, [topic], value_deserializer="str") as consumer:
            task = asyncio.create_task(consumer.run(slow, concurrency=16, idle_timeout_s=20))
            # cancelled while handlers sleep: between polled batches none may be running (the
            # check and the cancel run on the loop with nothing in between)
            while len(handled) < 100 or not running:
                await asyncio.sleep(0.001)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert cancelled  # handlers were running and were cancelled
            await consumer.run(fast, concurrency=16, idle_timeout_s=4)  # the rest, and those

    asyncio.run(main())
    assert set(handled) == set(range(1_000))  # nothing lost
    assert set(cancelled) <= set(Counter(handled))  # each cancelled one handled later
    assert sum(committed(bs, group, topic, PARTS)) == 1_000


def test_async_processor_awaits_a_batchs_handlers_at_once_exactly_once(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    from sdk.aio import AsyncProcessor
    from sdk.processor import OutputRecord
    from sdk.profiles import ProcessingProfile
    from tests.sdk.processor._support import verify

    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(PARTS), make_topic(PARTS), make_group()
    n = 2_000
    seed_keys(bs, src, n, 200)
    side = {"guarantee": "exactly_once", "bootstrap_servers": bs}
    profile = ProcessingProfile(
        guarantee="exactly_once",
        consumer={**side, "group_id": group, "session_timeout_ms": 6_000},
        producer={**side, "transactional_id_prefix": f"{group}-"},
        commit_interval_ms=100,
    )
    now = peak = done = 0

    async def main() -> None:
        proc = AsyncProcessor(profile, [src], instance_id="a0")

        async def handler(record: ConsumerRecord) -> list[OutputRecord]:
            nonlocal now, peak, done
            now += 1
            peak = max(peak, now)
            await asyncio.sleep(0.005)  # an awaited I/O call
            now -= 1
            done += 1
            if done == n:
                proc.stop()
            return [OutputRecord(dst, record.value, record.key)]

        await proc.run(handler, concurrency=32)

    asyncio.run(main())
    v = verify(bs, dst, PARTS, n)
    assert (v.count, v.duplicates, v.missing, v.order_violations) == (n, 0, 0, 0)
    assert peak > PARTS  # handlers of one batch awaited at the same time
