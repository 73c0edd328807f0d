"""The one crossing between a sync core loop in a worker thread and handlers on the loop.

:class:`LoopBridge` turns an async handler into the sync handler the core expects: each call
runs the coroutine on the event loop (``asyncio.run_coroutine_threadsafe``) and waits for it
in the worker thread. A cancelled handler surfaces in the core as :class:`HandlerCancelled`,
a ``BaseException``, so the core's failure policy (which catches ``Exception``) neither
retries nor dead-letters it: it leaves the core's loop with the record unhandled.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sdk._signals import loop_sigterm_stops

__all__ = ["HandlerCancelled", "LoopBridge"]

T = TypeVar("T")


class HandlerCancelled(BaseException):  # a signal through the sync core, not an error
    """The handler's task was cancelled: the record in hand is not handled."""


class LoopBridge:
    """Run a sync core's loop in ``worker`` while its handler runs on the event loop.

    Args:
        worker: The core's own thread (one per client: it owns the librdkafka client).
        stop: The core's ``stop()``.
    """

    def __init__(self, worker: concurrent.futures.Executor, stop: Callable[[], None]) -> None:
        self._worker = worker
        self._stop = stop
        # both touched only on the loop thread: the handler's task registers itself before
        # its body runs, so a cancellation always finds it (the worker thread may not even
        # have returned from run_coroutine_threadsafe yet)
        self._task: asyncio.Task[Any] | None = None
        self._cancelled = False

    def sync_handler(
        self, handler: Callable[[Any], Awaitable[T]], loop: asyncio.AbstractEventLoop
    ) -> Callable[[Any], T]:
        """The sync handler the core calls (in the worker thread) for each record."""

        async def on_loop(arg: Any) -> T:
            if self._cancelled:  # cancelled before this record's handler began: not handled
                raise asyncio.CancelledError()
            self._task = asyncio.current_task()
            try:
                return await handler(arg)
            finally:
                self._task = None

        def call(arg: Any) -> T:
            fut = asyncio.run_coroutine_threadsafe(on_loop(arg), loop)
            try:
                return fut.result()
            except concurrent.futures.CancelledError:
                raise HandlerCancelled() from None

        return call

    async def run(self, fn: Callable[[], T], *, handle_sigterm: bool = False) -> T:
        """Run the core's loop ``fn`` in the worker; a cancellation stops it, then waits.

        The core returns after the record in hand (whose handler is cancelled too, so it
        counts as not handled), runs its own way out (commit what was handled, abort an open
        transaction) and only then does the cancellation propagate: nothing of the core is
        left running behind the cancelled task.

        ``handle_sigterm`` turns SIGTERM into the core's ``stop()`` while it runs (the
        loop must run in the main thread), as the sync ``run(handle_sigterm=True)``.

        Raises:
            asyncio.CancelledError: The awaiting task (or the handler's) was cancelled.
            ConfigurationError: ``handle_sigterm`` on a loop outside the main thread.
        """
        loop = asyncio.get_running_loop()
        with loop_sigterm_stops(loop, self._stop, handle_sigterm):
            return await self._run(loop, fn)

    async def _run(self, loop: asyncio.AbstractEventLoop, fn: Callable[[], T]) -> T:
        self._cancelled = False
        work = loop.run_in_executor(self._worker, fn)
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            self._stop()
            self._cancelled = True
            if self._task is not None:
                self._task.cancel()
            with contextlib.suppress(HandlerCancelled):
                await asyncio.shield(work)
            raise
        except HandlerCancelled:  # the handler's own task was cancelled, not ours
            raise asyncio.CancelledError() from None
