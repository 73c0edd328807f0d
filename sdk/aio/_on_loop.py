"""``AsyncConsumer.run`` at_least_once on the event loop's own thread.

The thread bridge (:mod:`sdk.aio._bridge`) runs the sync core in a worker thread and crosses to
the loop once per polled batch. Measured on a 2-core machine, that crossing (two thread
wake-ups) costs about as much CPU as a hundred records, and the batch's messages, made in one
thread and handled in the other, cost more again: the AsyncConsumer ran at 0.55-0.9 of the sync
Consumer. Here the engine's batches are polled, handled and stored on the loop's thread, in the
awaiting task itself; the worker thread (which owns the client's blocking calls) only waits:

- for the run to begin and end (the client opened and subscribed; the final commit);
- for records when none are queued: a poll on the loop takes what librdkafka has queued without
  waiting, and only a poll that found nothing goes to the worker, which waits up to the
  Consumer's ``poll_timeout_s``; the polls wait in the worker until the first records came (the
  broker contact and the group join may block);
- for the failure policy: a record whose handler raised goes through the Consumer's own
  failure path there (retries with backoff, dead letter, stop), each attempt crossing back to
  the loop.

The Consumer's per-record contract holds as on the bridge: records in offset order, one at a
time; at_least_once stores the handled prefix at least every millisecond of handler time and
at the end of each batch, never a record before its handler finished; a :meth:`stop` is seen
before each record; the unhandled rest of a batch is sought back, so the next run reads it.

A poll on the loop also runs the rebalance callbacks librdkafka has due: a revoke's commit of
the stored offsets then holds the loop for its round trip.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager
from typing import TypeVar

from sdk._client import ConsumerClient, KafkaMessage
from sdk.aio._bridge import LoopBridge
from sdk.consumer import Consumer, ConsumerRecord, ConsumerStats

__all__ = ["run_on_loop", "within_run"]

C = TypeVar("C")


async def run_on_loop(
    consumer: Consumer,
    handler: Callable[[ConsumerRecord], Awaitable[object]],
    bridge: LoopBridge,
    *,
    max_records: int | None,
    idle_s: float | None,
    handle_sigterm: bool | None,
) -> ConsumerStats:
    """Run ``consumer`` (at_least_once, bytes in) with ``handler`` on this loop's thread.

    Raises:
        asyncio.CancelledError: The awaiting task was cancelled (after the handled prefix
            was stored and the run's final commit).
        HandlerError, KafkaClientError: As the sync ``run``.
    """
    loop = asyncio.get_running_loop()
    engine = consumer._loop

    async def body(client: ConsumerClient) -> None:
        batch = _Batches(consumer, handler, bridge, loop)
        await batch.run(engine.batches(max_records, idle_s, idle_yield=True))

    await within_run(bridge, loop, engine.running(False), body, handle_sigterm=handle_sigterm)
    return consumer.stats


async def within_run(
    bridge: LoopBridge,
    loop: asyncio.AbstractEventLoop,
    run: AbstractContextManager[C | None],
    body: Callable[[C], Awaitable[None]],
    *,
    handle_sigterm: bool | None,
) -> None:
    """``body(client)`` on the loop, inside a ``running()`` entered and left in the worker.

    Entering opens the client (broker contact may block); leaving makes the run's final
    commit, whatever ended the body, as the sync run's ``with`` does. A None client (stopped
    while waiting for a broker) runs no body. SIGTERM stops the core meanwhile as
    :meth:`LoopBridge.run` says (``running()`` itself is entered with SIGTERM left alone).
    """
    bridge.begin()
    with bridge.sigterm_stops(loop, handle_sigterm):
        await _within(bridge, loop, run, body)


async def _within(
    bridge: LoopBridge,
    loop: asyncio.AbstractEventLoop,
    run: AbstractContextManager[C | None],
    body: Callable[[C], Awaitable[None]],
) -> None:
    entered = False

    def enter() -> C | None:
        nonlocal entered
        client = run.__enter__()
        entered = True
        return client

    try:
        client = await bridge.in_worker(loop, enter)
        if client is not None:
            await body(client)
    except BaseException as exc:
        if not entered:  # the run never began (or a cancellation came before it did)
            raise
        # the run's way out (the final commit) whatever ended it, as the sync run's
        way_out = functools.partial(run.__exit__, type(exc), exc, exc.__traceback__)
        suppressed = await bridge.in_worker(loop, way_out, stop=False)
        if not suppressed:
            raise
    else:
        await bridge.in_worker(loop, lambda: run.__exit__(None, None, None), stop=False)


class _Batches:
    """The run's batches, each polled and handled on the loop (the module docstring)."""

    def __init__(
        self,
        consumer: Consumer,
        handler: Callable[[ConsumerRecord], Awaitable[object]],
        bridge: LoopBridge,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self._consumer = consumer
        self._engine = consumer._loop
        self._handler = handler
        self._bridge = bridge
        self._loop = loop
        # the failure path's attempts run in the worker and cross to the loop one by one
        self._sync_handler = bridge.sync_handler(handler, loop)

    async def run(self, batches: Iterator[list[KafkaMessage]]) -> None:
        engine = self._engine
        wait_s = engine.poll_timeout_s
        on_loop = False  # until records came, every poll waits in the worker
        try:
            while True:
                if on_loop:
                    engine.poll_timeout_s = 0.0
                    messages = next(batches, None)
                else:
                    engine.poll_timeout_s = wait_s
                    messages = await self._bridge.in_worker(self._loop, lambda: next(batches, None))
                if messages is None:
                    return  # stopped, max_records taken or idle_s without records
                on_loop = bool(messages)  # nothing queued: the next poll waits in the worker
                if messages:
                    await self._batch(messages)
                    # the loop's other tasks get their turn once per batch, even while records
                    # keep coming and no handler ever suspends
                    await asyncio.sleep(0)
        finally:
            engine.poll_timeout_s = wait_s

    async def _batch(self, messages: list[KafkaMessage]) -> None:
        """Handle one batch in order; store the handled prefix; seek back the rest."""
        consumer, engine = self._consumer, self._engine
        client = engine.client
        assert client is not None  # inside the run
        if engine.observed() is not None:
            # traced: the core's own per-record spans, each handler crossing on its own
            try:
                await self._bridge.in_worker(
                    self._loop, lambda: consumer._handling.each(self._sync_handler, messages)
                )
            finally:
                consumer._offsets.rewind_rest(client, messages, engine.in_flight)
            return
        handler, stopped, handled = self._handler, engine.stopped, consumer._offsets.handled
        monotonic, new, refs = time.monotonic, object.__new__, sys.getrefcount
        record: ConsumerRecord | None = None
        n = len(messages)
        done = stored = others = 0
        store_every_s = consumer._handling.store_every_s  # the sync hot loop's bound
        last_store = monotonic()
        try:
            while done < n:
                if stopped():  # before each record, as on the bridge: a stop from a handler
                    break  # ends the run after it; the rest is not stored: read again
                message = messages[done]
                # view(ConsumerRecord, message), inlined; reused as sdk.records.handle_run does
                if record is None or refs(record) > 2:
                    record = new(ConsumerRecord)
                record._key, record._value, record._raw = message.key(), message.value(), message
                try:
                    await handler(record)
                except Exception as first:
                    if done > stored:  # the handled prefix first, as the sync hot loop
                        handled(client, messages[stored:done])
                        stored = done
                    await self._failed(record, message, first)
                    others += 1
                done += 1
                now = monotonic()
                if now - last_store >= store_every_s:
                    handled(client, messages[stored:done])
                    stored, last_store = done, now
        finally:
            consumer._failure.stats.handled += done - others
            engine.in_flight -= done
            try:
                if done > stored:
                    handled(client, messages[stored:done])
            finally:
                consumer._offsets.rewind_rest(client, messages, engine.in_flight)

    async def _failed(
        self, record: ConsumerRecord, message: KafkaMessage, first: Exception
    ) -> None:
        """The failure policy for a record whose handler raised ``first`` (in the worker)."""
        failure = self._consumer._failure
        await self._bridge.in_worker(
            self._loop, lambda: failure.handle(self._sync_handler, record, [message], first)
        )
