"""AsyncConsumer on a real broker: run() with an async handler, cancellation, async for + ack.

Committed offsets are read by an outside client (tests.sdk.consumer._support.committed), not
by the SDK. Each test drives its own event loop with ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sdk.aio import AsyncConsumer
from sdk.consumer import ConsumerRecord
from tests.sdk.consumer._support import committed, profile, seed

pytestmark = pytest.mark.broker


@pytest.mark.parametrize("guarantee", ["at_least_once", "at_most_once"])
def test_run_awaits_the_handler_for_every_record_and_commits(
    kafka_cluster: Any, make_topic: Any, make_group: Any, guarantee: str
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed(bs, topic, 500)
    seen: list[int] = []

    async def handler(record: ConsumerRecord) -> None:
        await asyncio.sleep(0)  # a real await: the handler runs on the loop
        seen.append(int(record.value))

    async def main() -> None:
        async with AsyncConsumer(profile(bs, guarantee, group), [topic]) as consumer:
            stats = await consumer.run(handler, max_records=500, idle_timeout_s=30)
            assert stats.handled == 500

    asyncio.run(main())
    assert seen == list(range(500))
    assert committed(bs, group, topic) == [500]


def test_a_cancelled_run_commits_what_was_handled_and_loses_nothing(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    """Cancelled while the handler of record 100 is waiting: 0-99 are committed, 100 is not
    stored (its handler was cancelled), and the next run starts at 100."""
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed(bs, topic, 300)
    seen: list[int] = []
    waiting = asyncio.Event()

    async def stuck_at_100(record: ConsumerRecord) -> None:
        if int(record.value) == 100:
            waiting.set()
            await asyncio.sleep(3600)  # cancelled here
        seen.append(int(record.value))

    async def rest(record: ConsumerRecord) -> None:
        seen.append(int(record.value))

    async def main() -> None:
        prof = profile(bs, "at_least_once", group)
        async with AsyncConsumer(prof, [topic]) as consumer:
            task = asyncio.create_task(consumer.run(stuck_at_100, idle_timeout_s=30))
            await asyncio.wait_for(waiting.wait(), 30)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        assert committed(bs, group, topic) == [100]
        async with AsyncConsumer(prof, [topic]) as again:
            await again.run(rest, max_records=200, idle_timeout_s=30)

    asyncio.run(main())
    assert seen == list(range(300))  # every record handled once: nothing lost, nothing twice
    assert committed(bs, group, topic) == [300]


def test_async_for_stores_only_what_was_acknowledged(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed(bs, topic, 50)

    async def main() -> list[int]:
        taken: list[int] = []
        async with AsyncConsumer(profile(bs, "at_least_once", group), [topic]) as consumer:
            async for record in consumer:
                taken.append(int(record.value))
                if len(taken) <= 10:
                    consumer.ack(record)
                if len(taken) == 20:
                    break
        return taken

    taken = asyncio.run(main())
    assert taken == list(range(20))
    assert committed(bs, group, topic) == [10]  # the acknowledged prefix, stored on close


def test_a_stop_mid_batch_keeps_each_record_handled_once(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    """A polled batch's handlers run in one crossing to the loop; a stop() from the handler of
    record 150 ends that crossing there, the core still stores 0-150 (their handlers ran) and
    the next run starts at 151: every record handled once."""
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(1), make_group()
    seed(bs, topic, 300)
    seen: list[int] = []

    async def main() -> None:
        prof = profile(bs, "at_least_once", group)
        async with AsyncConsumer(prof, [topic]) as consumer:

            async def stop_at_150(record: ConsumerRecord) -> None:
                seen.append(int(record.value))
                if int(record.value) == 150:
                    consumer.stop()

            await consumer.run(stop_at_150, idle_timeout_s=30)
        assert committed(bs, group, topic) == [151]
        async with AsyncConsumer(prof, [topic]) as again:

            async def rest(record: ConsumerRecord) -> None:
                seen.append(int(record.value))

            await again.run(rest, max_records=149, idle_timeout_s=30)

    asyncio.run(main())
    assert seen == list(range(300))
    assert committed(bs, group, topic) == [300]
