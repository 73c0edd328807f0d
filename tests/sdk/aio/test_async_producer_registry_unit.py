"""AsyncProducer and a schema registry serializer: the registry is asked off the event loop.

A registry serializer asks the registry over HTTP on its first call for a subject and answers
from its cache afterwards. ``await AsyncProducer.send()`` serializes a topic's first record
once in a thread before sending it, so that HTTP call never blocks the loop. No broker and no
registry: the sync Producer runs on :class:`sdk.testing.fakes.FakeProducerClient`, and the
registry serializer's inner serializer sleeps on its first call per topic as a registry
lookup would.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
from confluent_kafka.serialization import SerializationContext

from sdk.aio import AsyncProducer
from sdk.errors import SchemaRegistryUnavailableError, SerializationError
from sdk.producer import ProducerRecord
from sdk.profiles import ProducerProfile
from sdk.schemas import RegistrySerializer, SchemaRegistryConfig
from sdk.testing.fakes import FakeProducerFactory

LOOKUP_S = 0.3  # what the first call of a subject waits, as a registry round trip


class _Registry:
    """An inner serializer with a cache: slow on a subject's first call, then fast."""

    def __init__(self, fail: BaseException | None = None) -> None:
        self.cached: set[str] = set()
        self.calls: list[tuple[str, bool]] = []  # (topic, on the loop's thread)
        self.loop_thread: threading.Thread | None = None
        self.fail = fail

    def __call__(self, obj: Any, ctx: SerializationContext) -> bytes:
        self.calls.append((ctx.topic, threading.current_thread() is self.loop_thread))
        if ctx.topic not in self.cached:
            time.sleep(LOOKUP_S)  # the HTTP round trip
            if self.fail is not None:
                raise self.fail
            self.cached.add(ctx.topic)
        return b"\x00\x00\x00\x00\x01" + str(obj).encode()


def _producer(inner: _Registry) -> AsyncProducer:
    config = SchemaRegistryConfig(url="mock://async-first-record")
    return AsyncProducer(
        ProducerProfile(guarantee="at_least_once", bootstrap_servers="b:1"),
        value_serializer=RegistrySerializer("avro", inner, config),
        check_topics=False,
        telemetry=False,
        client_factory=FakeProducerFactory(),
    )


async def _ticks_while(work: Any, gaps: list[float]) -> Any:
    """Await ``work`` while a task ticks every 10 ms; each gap between ticks goes to ``gaps``."""
    done = asyncio.Event()

    async def tick() -> None:
        last = time.monotonic()
        while not done.is_set():
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now

    ticker = asyncio.create_task(tick())
    try:
        return await work
    finally:
        done.set()
        await ticker


def test_a_topics_first_record_asks_the_registry_off_the_loop() -> None:
    inner = _Registry()

    async def main() -> None:
        inner.loop_thread = threading.current_thread()
        async with _producer(inner) as producer:
            for topic in ("orders", "payments"):
                gaps: list[float] = []
                meta = await _ticks_while(producer.send(topic, {"id": 1}, key=b"k"), gaps)
                assert meta.topic == topic
                assert max(gaps) < LOOKUP_S / 2, f"the loop stood still {max(gaps):.2f}s"
            await producer.send("orders", {"id": 2}, key=b"k")  # cached: on the loop

    asyncio.run(main())
    # per topic: the lookup in a thread, then the record's own serialization on the loop
    assert inner.calls == [
        ("orders", False),
        ("orders", True),
        ("payments", False),
        ("payments", True),
        ("orders", True),
    ]


@pytest.mark.parametrize(
    ("fail", "raised"),
    [
        (ConnectionError("connection refused"), SchemaRegistryUnavailableError),
        (ValueError("does not fit the schema"), SerializationError),
    ],
    ids=["registry-down", "bad-record"],
)
def test_a_failure_on_the_first_record_is_raised_by_send_without_blocking_the_loop(
    fail: BaseException, raised: type[Exception]
) -> None:
    inner = _Registry(fail)

    async def main() -> None:
        inner.loop_thread = threading.current_thread()
        async with _producer(inner) as producer:
            gaps: list[float] = []
            with pytest.raises(raised) as info:
                await _ticks_while(producer.send("orders", {"id": 1}, key=b"k"), gaps)
            assert max(gaps) < LOOKUP_S / 2, f"the loop stood still {max(gaps):.2f}s"
            assert info.value.record == ProducerRecord("orders", {"id": 1}, b"k")  # type: ignore[attr-defined]
            assert producer.sync._client is None or not producer.sync._client.produced

    asyncio.run(main())
    assert inner.calls == [("orders", False)]  # asked once, in a thread; nothing sent
