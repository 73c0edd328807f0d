"""asyncio producer cases: SDK AsyncProducer, raw AIOProducer, aiokafka.

Each produces the same N records under the at_least_once settings (acks=all, idempotence,
linger.ms=5) the way a competent user of that client would, from one coroutine: queue every
record, keeping its delivery future, then flush and wait for every future. The clock covers
queueing, flush and the futures (every record acknowledged).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from benchmarks._harness import Payloads, Result, topic
from benchmarks._producers import _profile
from sdk.aio import AsyncProducer
from sdk.errors import KafkaTimeoutError

GROUP = "asyncio producer"


def sdk_async(bootstrap: str, records: Payloads, size: int) -> Result:
    """``AsyncProducer.send_nowait`` per record (a future each), then flush and gather."""

    async def go() -> tuple[int, float]:
        name = topic(bootstrap)
        async with AsyncProducer(_profile(bootstrap, "at_least_once")) as producer:
            await producer.send(name, b"warm-up")  # client + topic check outside the clock
            send = producer.send_nowait
            futures = []
            start = time.perf_counter()
            for key, value in records:
                while True:
                    try:
                        futures.append(send(name, value, key))
                        break
                    except KafkaTimeoutError:  # local queue full: let deliveries drain it
                        await asyncio.sleep(0.005)
            await producer.flush()
            done = await asyncio.gather(*futures, return_exceptions=True)
            seconds = time.perf_counter() - start
        return sum(1 for d in done if not isinstance(d, BaseException)), seconds

    ok, seconds = asyncio.run(go())
    return Result(GROUP, "SDK AsyncProducer at_least_once", size, ok, seconds)


def raw_aio(bootstrap: str, records: Payloads, size: int) -> Result:
    """confluent-kafka's ``AIOProducer``: ``await produce()`` per record, then flush and gather."""
    from confluent_kafka.aio import AIOProducer

    config = {**_profile(bootstrap, "at_least_once").render(), "partitioner": "murmur2_random"}

    async def go() -> tuple[int, float]:
        name = topic(bootstrap)
        producer = AIOProducer(config)
        try:
            await (await producer.produce(name, b"warm-up"))
            produce = producer.produce
            futures = []
            start = time.perf_counter()
            for key, value in records:
                futures.append(await produce(name, value, key))
            await producer.flush()
            done = await asyncio.gather(*futures, return_exceptions=True)
            seconds = time.perf_counter() - start
        finally:
            await producer.close()
        return sum(1 for d in done if not isinstance(d, BaseException)), seconds

    ok, seconds = asyncio.run(go())
    return Result(GROUP, "raw confluent-kafka AIOProducer (alo settings)", size, ok, seconds)


def aiokafka(bootstrap: str, records: Payloads, size: int) -> Result | None:
    """The aiokafka ``AIOKafkaProducer``: ``await send()`` per record, then flush and gather."""
    try:
        from aiokafka import AIOKafkaProducer
    except ImportError:  # a dev extra; say so rather than fail the whole run
        print("aiokafka is not installed (pip install -e '.[dev]'): case skipped")
        return None

    async def go() -> tuple[int, float]:
        name = topic(bootstrap)
        producer: Any = AIOKafkaProducer(
            bootstrap_servers=bootstrap, acks="all", enable_idempotence=True, linger_ms=5
        )
        await producer.start()
        try:
            await producer.send_and_wait(name, b"warm-up")
            send = producer.send
            futures = []
            start = time.perf_counter()
            for key, value in records:
                futures.append(await send(name, value, key=key))
            await producer.flush()
            done = await asyncio.gather(*futures, return_exceptions=True)
            seconds = time.perf_counter() - start
        finally:
            await producer.stop()
        return sum(1 for d in done if not isinstance(d, BaseException)), seconds

    ok, seconds = asyncio.run(go())
    return Result(GROUP, "aiokafka 0.14 (alo settings)", size, ok, seconds)


def sdk_async_consumer(bootstrap: str, name: str, n: int, size: int) -> Result:
    """``AsyncConsumer.run(async_handler)`` at_least_once until N records (consumer group)."""
    from benchmarks import _harness
    from benchmarks._consumers import GROUP as CONSUMER_GROUP
    from benchmarks._consumers import _group
    from sdk.aio import AsyncConsumer
    from sdk.consumer import ConsumerRecord
    from sdk.profiles import ConsumerProfile

    profile = ConsumerProfile(
        guarantee="at_least_once",
        bootstrap_servers=bootstrap,
        group_id=_group(),
        **_harness.sdk_consumer_fields(),
    )
    first = 0.0

    async def one(record: ConsumerRecord) -> None:  # the same work as the sync case's handler
        nonlocal first
        if not first:
            first = time.perf_counter()
        _ = record.value

    async def go() -> tuple[int, float]:
        async with AsyncConsumer(profile, [name]) as consumer:
            stats = await consumer.run(one, max_records=n)
            seconds = time.perf_counter() - first  # after the final commit, before close
        return int(stats.handled or n), seconds

    handled, seconds = asyncio.run(go())
    return Result(CONSUMER_GROUP, "SDK AsyncConsumer at_least_once run", size, handled, seconds)
