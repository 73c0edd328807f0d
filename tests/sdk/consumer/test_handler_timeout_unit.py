"""handler_timeout_s with a scripted client: a handler stuck past it goes through the
failure policy without the run waiting for it (the dead-letter case runs on the broker, in
test_concurrency.py)."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from sdk.consumer import Consumer
from sdk.errors import ConfigurationError, HandlerError
from sdk.profiles import ConsumerProfile
from sdk.testing.fakes import FakeConsumerClient, FakeMessage


def test_a_handler_past_handler_timeout_s_stops_the_run_and_is_read_again() -> None:
    """Scripted client: record 1 blocks for good; after 0.5 s the policy (stop) gives up on
    it: the run raises HandlerError at once, nothing at or after it is stored, and the
    client is sought back to it."""
    client = FakeConsumerClient(
        batches=[[FakeMessage("t", 0, i, str(i).encode(), key=f"k{i}".encode()) for i in range(6)]],
        assign_on_subscribe=[("t", 0)],
    )
    profile = ConsumerProfile(
        guarantee="at_least_once",
        bootstrap_servers="unused:1",
        group_id="g",
        failure={"attempts": 3, "on_failure": "stop"},
    )
    forever = threading.Event()

    def handler(record: Any) -> None:
        if record.offset == 1:
            forever.wait()  # stuck: the run must not wait for it

    try:
        with Consumer(profile, ["t"], client_factory=lambda cfg: client) as consumer:
            started = time.monotonic()
            with pytest.raises(HandlerError, match=r"still running after 0\.5s") as info:
                consumer.run(handler, concurrency=3, handler_timeout_s=0.5, idle_timeout_s=30)
            assert time.monotonic() - started < 10
            assert info.value.record.offset == 1 and info.value.attempts == 1
            assert consumer.stats.handler_failures == 1 and consumer.stats.retries == 0
    finally:
        forever.set()
    assert all(offset <= 1 for _, _, offset in client.stored)
    assert ("t", 0, 1) in client.seeks  # read again by the next run


def test_handler_timeout_needs_concurrency() -> None:
    profile = ConsumerProfile(guarantee="at_least_once", bootstrap_servers="unused:1", group_id="g")
    with Consumer(profile, ["t"]) as consumer:
        with pytest.raises(ConfigurationError) as info:
            consumer.run(lambda r: None, handler_timeout_s=1)
        assert info.value.field == "handler_timeout_s"


@pytest.mark.parametrize("concurrency", [1, 4])
def test_an_async_handler_past_the_timeout_is_cancelled_and_fails(concurrency: int) -> None:
    """AsyncConsumer: the attempt is cancelled at the timeout (TimeoutError), retried per the
    policy (2 attempts), then the run stops with HandlerError; nothing at or after it stored."""
    import asyncio

    from sdk.aio import AsyncConsumer

    client = FakeConsumerClient(
        batches=[[FakeMessage("t", 0, i, str(i).encode(), key=f"k{i}".encode()) for i in range(4)]],
        assign_on_subscribe=[("t", 0)],
    )
    profile = ConsumerProfile(
        guarantee="at_least_once",
        bootstrap_servers="unused:1",
        group_id="g",
        failure={"attempts": 2, "backoff_initial_ms": 1, "on_failure": "stop"},
    )
    cancelled: list[int] = []

    async def handler(record: Any) -> None:
        if record.offset == 1:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                cancelled.append(record.offset)
                raise

    async def main() -> None:
        async with AsyncConsumer(profile, ["t"], client_factory=lambda cfg: client) as c:
            with pytest.raises(HandlerError) as info:
                await c.run(
                    handler, concurrency=concurrency, handler_timeout_s=0.2, idle_timeout_s=30
                )
            assert isinstance(info.value.__cause__, TimeoutError)
            assert c.stats.retries == 1 and c.stats.handler_failures == 1

    started = time.monotonic()
    asyncio.run(main())
    assert time.monotonic() - started < 10
    assert cancelled == [1, 1]  # both attempts ended at the timeout
    assert all(offset <= 1 for _, _, offset in client.stored)
