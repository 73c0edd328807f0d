"""AsyncProducer on a real broker: acknowledged sends, futures, errors, transactions, cancel.

Records are counted by a raw confluent-kafka reader (read_committed where it matters), not by
the SDK. Each test drives its own event loop with ``asyncio.run``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import pytest

from sdk.aio import AsyncProducer
from sdk.errors import KafkaTimeoutError, SdkError, UnknownTopicError
from sdk.producer import ProducerRecord, RecordMetadata
from sdk.profiles import ProducerProfile
from tests.sdk.aio._support import read_all

pytestmark = pytest.mark.broker


def test_awaited_and_unawaited_sends_are_all_acknowledged(
    kafka_cluster: Any, make_topic: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(3)
    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers=bs)

    async def main() -> tuple[list[RecordMetadata], list[RecordMetadata]]:
        async with AsyncProducer(profile, key_serializer="str", value_serializer="str") as p:
            awaited = await asyncio.gather(
                *(p.send(topic, f"a{i}", key=f"k{i}") for i in range(200))
            )
            futures = [p.send_nowait(topic, f"b{i}", key=f"k{i}") for i in range(300)]
            await p.flush(30)
            assert all(f.done() for f in futures)  # flush resolved them (off the loop)
            return list(awaited), [f.result() for f in futures]

    awaited, later = asyncio.run(main())
    assert len({(m.partition, m.offset) for m in awaited + later}) == 500
    assert all(m.topic == topic and m.offset >= 0 for m in awaited + later)
    values = read_all(bs, topic, 3)
    assert sorted(values) == sorted(
        [f"a{i}".encode() for i in range(200)] + [f"b{i}".encode() for i in range(300)]
    )


def test_an_unknown_topic_is_named(kafka_cluster: Any) -> None:
    profile = ProducerProfile(
        guarantee="at_least_once", bootstrap_servers=kafka_cluster.bootstrap_servers
    )

    async def main() -> None:
        async with AsyncProducer(profile, metadata_timeout_s=5) as p:
            with pytest.raises(UnknownTopicError, match="no-such-topic"):
                await p.send("no-such-topic-for-async", b"x")

    asyncio.run(main())


def test_a_cancelled_transaction_is_aborted_and_the_next_one_commits(
    kafka_cluster: Any, make_topic: Any
) -> None:
    """A task cancelled inside ``async with transaction()`` leaves no open transaction:
    read_committed readers see only the committed records and keep progressing."""
    bs = kafka_cluster.bootstrap_servers
    topic = make_topic(2)
    profile = ProducerProfile(
        guarantee="exactly_once", bootstrap_servers=bs, transactional_id=f"aio-{time.time_ns()}"
    )
    started = asyncio.Event()

    async def doomed(p: AsyncProducer) -> None:
        async with p.transaction():
            for i in range(100):
                p.send_nowait(topic, f"doomed{i}".encode())
            await p.flush(30)  # in the log, not committed
            started.set()
            await asyncio.sleep(30)  # cancelled here, mid-transaction

    async def main() -> None:
        async with AsyncProducer(profile) as p:
            task = asyncio.create_task(doomed(p))
            await started.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            async with p.transaction():
                await asyncio.gather(*(p.send(topic, f"ok{i}".encode()) for i in range(50)))
            await p.send_many([ProducerRecord(topic, b"never")] * 0)  # an empty batch is fine

    asyncio.run(main())
    assert sorted(read_all(bs, topic, 2)) == sorted(f"ok{i}".encode() for i in range(50))
    uncommitted = read_all(bs, topic, 2, committed=False)
    assert sum(v.startswith(b"doomed") for v in uncommitted) == 100  # written, then aborted


def test_the_loop_keeps_running_while_a_flush_waits() -> None:
    """flush() runs off the loop: a ticker on the same loop keeps ticking while it waits (no
    broker: the records cannot be delivered, so the flush waits its whole timeout)."""
    profile = ProducerProfile(guarantee="at_least_once", bootstrap_servers="127.0.0.1:1")
    ticks: list[float] = []

    async def ticker() -> None:
        while True:
            ticks.append(time.monotonic())
            await asyncio.sleep(0.01)

    async def main() -> tuple[float, float]:
        p = AsyncProducer(profile, check_topics=False)
        for i in range(1_000):
            p.send_nowait("t", str(i).encode())
        t = asyncio.create_task(ticker())
        began = time.monotonic()
        with pytest.raises(KafkaTimeoutError, match="still queued"):
            await p.flush(1.0)
        ended = time.monotonic()
        t.cancel()
        with contextlib.suppress(SdkError):
            await p.close(0.1)
        return began, ended

    began, ended = asyncio.run(main())
    during = [x for x in ticks if began <= x <= ended]
    assert ended - began >= 0.9
    assert len(during) >= 20  # a blocked loop would not tick at all during the flush
