"""``AsyncConsumer.run`` at_least_once with bytes in: polled, handled and stored on the loop.

With fake clients (no broker; the broker tests in test_async_consumer.py and the SIGKILL test
in test_async_consumer_crash.py run the same path on Kafka). These show that the handler runs
on the loop's own thread, that a failure mid-batch goes through the failure policy in the
worker with the records around it handled once, that a failure for good stores the handled
prefix only, and that a cancellation stores the handled prefix, seeks the rest back and ends
with the run's final commit.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from sdk.aio import AsyncConsumer
from sdk.consumer import ConsumerRecord
from sdk.errors import HandlerError
from sdk.profiles import ConsumerProfile
from sdk.testing.fakes import FakeConsumerClient, FakeMessage


def _client(n: int, hooks: dict[str, Any] | None = None) -> FakeConsumerClient:
    messages = [FakeMessage("t", 0, i, b"%d" % i, key=b"k") for i in range(n)]
    return FakeConsumerClient(
        messages, assign_on_subscribe=[("t", 0)], topic_in_logs=False, hooks=hooks or {}
    )


def _profile(on_failure: str = "stop") -> ConsumerProfile:
    return ConsumerProfile(
        guarantee="at_least_once",
        bootstrap_servers="unused:1",
        group_id="g",
        batch_size=4,
        failure={"attempts": 3, "backoff_initial_ms": 0, "on_failure": on_failure},
    )


def _run(client: FakeConsumerClient, handler: Any, profile: ConsumerProfile, n: int) -> Any:
    async def main() -> Any:
        async with AsyncConsumer(profile, ["t"], client_factory=lambda cfg: client) as consumer:
            return await consumer.run(handler, max_records=n, idle_timeout_s=5)

    return asyncio.run(main())


def test_polls_and_handlers_run_on_the_loops_own_thread_and_every_offset_is_stored() -> None:
    polled_in: list[int] = []
    client = _client(10, {"consume": lambda *_a, **_k: polled_in.append(threading.get_ident())})
    threads: set[int] = set()
    values: list[bytes] = []

    async def handler(record: ConsumerRecord) -> None:
        threads.add(threading.get_ident())
        values.append(record.value)

    main_thread = threading.get_ident()
    stats = _run(client, handler, _profile(), 10)
    assert values == [b"%d" % i for i in range(10)]
    assert threads == {main_thread}  # asyncio.run's loop runs in this thread
    # the first polls wait in the worker; once records came, the polls run on the loop
    assert polled_in[0] != main_thread
    assert main_thread in polled_in
    assert stats.handled == 10
    assert max(offset for _, offset in client.stored) == 10
    assert client.commits  # the run's final commit


def test_a_failure_mid_batch_is_retried_the_others_handled_once_every_offset_stored() -> None:
    client = _client(6)
    calls: list[int] = []

    async def handler(record: ConsumerRecord) -> None:
        calls.append(int(record.value))
        if record.value == b"3" and calls.count(3) == 1:
            raise ValueError("record 3 fails its first attempt")

    stats = _run(client, handler, _profile(), 6)
    assert calls == [0, 1, 2, 3, 3, 4, 5]  # the retry in the worker, crossing to the loop
    assert (stats.handled, stats.handler_failures, stats.retries) == (6, 0, 1)
    assert max(offset for _, offset in client.stored) == 6


def test_a_failure_for_good_stores_only_the_records_before_it() -> None:
    client = _client(6)
    calls: list[int] = []

    async def handler(record: ConsumerRecord) -> None:
        calls.append(int(record.value))
        if record.value == b"2":
            raise ValueError("record 2 always fails")

    with pytest.raises(HandlerError):
        _run(client, handler, _profile("stop"), 6)
    assert calls == [0, 1, 2, 2, 2]  # three attempts of record 2, nothing after it
    assert max(offset for _, offset in client.stored) == 2  # 0 and 1; never 2
    assert (0, 2) in client.seeks  # the rest of the batch sought back: read again


def test_a_cancelled_run_stores_the_handled_prefix_and_seeks_back_the_rest() -> None:
    client = _client(8)
    calls: list[int] = []

    async def main() -> None:
        async with AsyncConsumer(_profile(), ["t"], client_factory=lambda cfg: client) as consumer:
            started = asyncio.Event()

            async def handler(record: ConsumerRecord) -> None:
                calls.append(int(record.value))
                if record.value == b"5":
                    started.set()
                    await asyncio.sleep(30)  # cancelled here

            run = asyncio.ensure_future(consumer.run(handler, max_records=8, idle_timeout_s=5))
            await started.wait()
            run.cancel()
            with pytest.raises(asyncio.CancelledError):
                await run

    asyncio.run(main())
    assert calls == [0, 1, 2, 3, 4, 5]
    assert max(offset for _, offset in client.stored) == 5  # 0-4 handled; 5 was cancelled
    assert (0, 5) in client.seeks  # 5 and what follows it in its batch: read again
    assert client.commits  # the run's final commit still ran
