"""The asyncio consumer: the SDK :class:`~sdk.consumer.Consumer` driven from an event loop.

No second consumer core: the sync Consumer's loop (poll, the at-most-once commit before
handling, the failure policy, offset stores after handling, the commit at the end of a run,
rebalance callbacks) runs unchanged in **one worker thread** per AsyncConsumer; only the
handler runs on the event loop. Each record is handed across
(``asyncio.run_coroutine_threadsafe``), which costs a thread hop per record: the price of
keeping every guarantee decision in one place (docs/performance.md has the numbers).

Cancellation: cancelling the task awaiting :meth:`AsyncConsumer.run` stops the sync loop and
cancels the handler in progress; that record counts as not handled (its offset is not stored,
at_least_once delivers it again), what was handled before is committed, then the
cancellation propagates. The worker thread is always waited for, so no librdkafka call is
left running behind the cancelled task.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import functools
from collections.abc import AsyncIterator, Awaitable, Callable, Generator, Sequence
from typing import Literal, TypedDict, TypeVar, TypeVarTuple, Unpack

from sdk._client import ConsumerClient, KafkaMessage
from sdk._config import ClientConfig, ConfigMapping
from sdk._deprecation import renamed
from sdk.aio._bridge import HandlersAhead, LoopBridge
from sdk.aio._on_loop import run_on_loop
from sdk.consumer import Consumer, ConsumerRecord, ConsumerStats, Ordering
from sdk.errors import ConfigurationError
from sdk.lifecycle import Lifecycle
from sdk.observability import Telemetry
from sdk.profiles import ConsumerProfile, Guarantee
from sdk.serialization import Deserializer

__all__ = ["AsyncConsumer"]

T = TypeVar("T")


class ConsumerOptions(TypedDict, total=False):
    """The keyword arguments of :class:`~sdk.consumer.Consumer`, passed on by AsyncConsumer."""

    key_deserializer: str | Deserializer
    value_deserializer: str | Deserializer
    dead_letter_producer_config: ConfigMapping | None
    poll_timeout_s: float
    client_factory: Callable[[ClientConfig], ConsumerClient] | None
    telemetry: Telemetry | Literal[False] | None
    verify_cluster: bool


Ts = TypeVarTuple("Ts")


def _timed(
    handler: Callable[[ConsumerRecord], Awaitable[object]], timeout_s: float
) -> Callable[[ConsumerRecord], Awaitable[object]]:
    """``handler`` whose attempts are cancelled after ``timeout_s`` (TimeoutError).

    Raises:
        ConfigurationError: ``timeout_s`` is not a number > 0.
    """
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or timeout_s <= 0:
        raise ConfigurationError(
            f"handler_timeout_s: a number of seconds > 0, got {timeout_s!r}",
            field="handler_timeout_s",
        )

    async def timed(record: ConsumerRecord) -> object:
        return await asyncio.wait_for(handler(record), timeout_s)

    return timed


class AsyncConsumer:
    """Consume from asyncio code under a :class:`ConsumerProfile`'s guarantee.

    Example::

        async with AsyncConsumer(profile, ["orders"]) as consumer:
            await consumer.run(handle_order)          # async def handle_order(record): ...

        async with AsyncConsumer(profile, ["orders"]) as consumer:
            async for record in consumer:
                await handle(record)
                consumer.ack(record)                  # at_least_once: stored after this

    Args:
        profile: An at_most_once or at_least_once consumer profile.
        topics: Topics to subscribe to.
        **options: The :class:`~sdk.consumer.Consumer` keyword arguments.

    Raises:
        ConfigurationError: As the sync Consumer (exactly_once: use the Processor).
    """

    def __init__(
        self, profile: ConsumerProfile, topics: Sequence[str], **options: Unpack[ConsumerOptions]
    ) -> None:
        self._sync = Consumer(profile, topics, **options)
        self.profile = profile
        # every call into the sync consumer runs here: one thread owns the librdkafka client
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="aio-consumer")
        self._acks: collections.deque[ConsumerRecord] = collections.deque()
        self._records: Generator[ConsumerRecord, None, None] | None = None
        self._bridge = LoopBridge(self._worker, self._sync.stop)

    @property
    def stats(self) -> ConsumerStats:
        """The sync Consumer's counters."""
        return self._sync.stats

    @property
    def sync(self) -> Consumer:
        """The sync Consumer underneath."""
        return self._sync

    async def __aenter__(self) -> AsyncConsumer:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def stop(self) -> None:
        """Make the current run (or iteration) return soon; safe from any thread."""
        self._sync.stop()

    async def close(self) -> None:
        """Store pending acks, commit, leave the group (in the worker thread)."""
        try:
            await self._call(self._close_sync)
        finally:
            self._worker.shutdown(wait=True)

    # ------------------------------------------------------------------ run
    async def run(
        self,
        handler: Callable[[ConsumerRecord], Awaitable[object]],
        *,
        max_records: int | None = None,
        idle_timeout_s: float | None = None,
        handle_sigterm: bool | None = None,
        idle_timeout: float | None = None,
        concurrency: int = 1,
        ordering: Ordering = "key",
        max_buffered: int | None = None,
        handler_timeout_s: float | None = None,
    ) -> ConsumerStats:
        """Await ``handler(record)`` for each record; commit per the guarantee (as ``run``).

        With ``concurrency=N`` up to N handlers run at the same time on the event loop, records
        of one ordering key one after another in offset order, offsets stored for the finished
        prefix only (the sync ``run(concurrency=N)``, docs/concurrency.md).

        Args:
            handler: ``async record -> None``.
            max_records: Return after this many records.
            idle_timeout_s: Return after this many seconds without a record.
            handle_sigterm: SIGTERM stops the run (commit what was handled, then return).
                None (default): when the loop runs in the main thread and the application
                has no SIGTERM handler of its own; True: always (the loop must run in the
                main thread); False: never.
            idle_timeout: Deprecated name of ``idle_timeout_s``, removed in 0.3.
            concurrency: Handlers awaited at the same time (1: one after another).
            ordering: ``"key"``, ``"partition"`` or ``"unordered"`` (see the sync ``run``).
            max_buffered: Records taken and not finished at which the partitions are paused.
            handler_timeout_s: An attempt of the handler still running after this long is
                cancelled and fails with :class:`TimeoutError`, which the failure policy
                retries, dead-letters or stops on as any failure (unlike the sync
                ``run``'s, the attempt really ends). None: no limit.

        Raises:
            asyncio.CancelledError: The awaiting task was cancelled (after the commit of what
                was handled; with ``concurrency``, every handler running is cancelled).
            HandlerError, SerializationError, KafkaClientError: As the sync ``run``.
            ConfigurationError: ``handle_sigterm=True`` outside the main thread.
        """
        idle_s = renamed(
            "AsyncConsumer.run", "idle_timeout", idle_timeout, "idle_timeout_s", idle_timeout_s
        )
        sync = self._sync
        if handler_timeout_s is not None:
            handler = _timed(handler, handler_timeout_s)
        if concurrency != 1:  # checked by the sync run
            return await self._bridge.run(
                functools.partial(
                    sync.run,
                    # each handler thread of the sync run waits for its coroutine on the loop
                    self._bridge.sync_handler(handler, asyncio.get_running_loop()),
                    max_records=max_records,
                    idle_timeout_s=idle_s,
                    handle_sigterm=False,
                    concurrency=concurrency,
                    ordering=ordering,
                    max_buffered=max_buffered,
                ),
                handle_sigterm=handle_sigterm,
            )
        decoder = sync._failure.decoder
        if decoder.raw and sync.guarantee is Guarantee.AT_LEAST_ONCE:
            # polled, handled and stored on this loop's thread (sdk/aio/_on_loop.py)
            return await run_on_loop(
                sync,
                handler,
                self._bridge,
                max_records=max_records,
                idle_s=idle_s,
                handle_sigterm=handle_sigterm,
            )
        ahead = HandlersAhead(
            self._bridge,
            handler,
            asyncio.get_running_loop(),
            # the record the core would hand over (bytes in: the core's own view); a poison
            # pill (None) is the core's to handle
            prepare=None if decoder.raw else decoder.try_decode,
            stopped=sync._loop.stopped,
            finish=True,  # run() ignores what a handler returns: the successes are finished
        )

        def before_handle(messages: list[KafkaMessage]) -> tuple[int, int]:
            if sync._loop.observed() is None:
                return ahead.run(messages), ahead.finished
            ahead.skip()  # traced: each record crosses on its own, so its span times it
            return 0, 0

        sync._before_handle = before_handle
        try:
            return await self._bridge.run(
                functools.partial(  # SIGTERM is the bridge's (on the loop), not the worker's
                    sync.run,
                    ahead.call,
                    max_records=max_records,
                    idle_timeout_s=idle_s,
                    handle_sigterm=False,
                ),
                handle_sigterm=handle_sigterm,
            )
        finally:
            sync._before_handle = None

    # ------------------------------------------------------------------ iteration
    def __aiter__(self) -> AsyncIterator[ConsumerRecord]:
        return self._iterate()

    def ack(self, record: ConsumerRecord) -> None:
        """Acknowledge a record from ``async for`` (at_least_once: stored at the next step).

        Does not block: the store happens in the worker thread before the next record is
        fetched, and on close.
        """
        self._acks.append(record)

    async def _iterate(self) -> AsyncIterator[ConsumerRecord]:
        self._records = self._sync.records()
        try:
            while True:
                batch = await self._call(self._next_batch)
                if not batch:
                    return
                for record in batch:
                    yield record
        finally:
            records, self._records = self._records, None
            if records is not None:  # the rest of the poll: at_least_once, read again
                await asyncio.shield(self._call(records.close))

    def _next_batch(self) -> list[ConsumerRecord]:
        """In the worker: store the acks so far, then take what the current poll holds."""
        self._store_acks()
        records = self._records
        if records is None:  # closed meanwhile: next(None) raised this
            raise TypeError("'NoneType' object is not an iterator")
        try:
            batch = [next(records)]
        except StopIteration:
            return []
        while self._sync._loop.in_flight > 0:  # the rest of the same poll: no waiting
            try:
                batch.append(next(records))
            except StopIteration:
                break
        return batch

    def _store_acks(self) -> None:
        acks = self._acks
        while acks:
            self._sync.ack(acks.popleft())

    def _close_sync(self) -> None:
        if self._records is not None:
            self._records.close()
            self._records = None
        if self._sync.state is not Lifecycle.CLOSED:
            self._store_acks()
        self._sync.close()

    async def _call(self, fn: Callable[[*Ts], T], *args: *Ts) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, functools.partial(fn, *args))
