"""The one crossing between a sync core loop in a worker thread and handlers on the loop.

:class:`LoopBridge` turns an async handler into the sync handler the core expects: each call
runs the coroutine on the event loop (``asyncio.run_coroutine_threadsafe``) and waits for it
in the worker thread. A cancelled handler surfaces in the core as :class:`HandlerCancelled`,
a ``BaseException``, so the core's failure policy (which catches ``Exception``) neither
retries nor dead-letters it: it leaves the core's loop with the record unhandled.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import sys
from collections.abc import Awaitable, Callable
from typing import TypeVar

from sdk._client import KafkaMessage
from sdk._signals import loop_sigterm_stops
from sdk.records import ConsumerRecord, view

__all__ = ["HandlerCancelled", "HandlersAhead", "LoopBridge"]

T = TypeVar("T")
A = TypeVar("A")
_new = object.__new__
_refs = sys.getrefcount


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
        # both touched only on the loop thread: a handler's task registers itself before
        # its body runs, so a cancellation always finds it (the worker thread may not even
        # have returned from run_coroutine_threadsafe yet); several with run(concurrency=N)
        self._tasks: set[asyncio.Task[object]] = set()
        self._cancelled = False

    def sync_handler(
        self, handler: Callable[[A], Awaitable[T]], loop: asyncio.AbstractEventLoop
    ) -> Callable[[A], T]:
        """The sync handler the core calls for each record, in the core's thread.

        With ``run(concurrency=N)`` the core calls it from N handler threads: their
        coroutines then run on the loop at the same time.
        """

        async def on_loop(arg: A) -> T:
            if self._cancelled:  # cancelled before this record's handler began: not handled
                raise asyncio.CancelledError()
            task = asyncio.current_task()
            if task is not None:
                self._tasks.add(task)
            try:
                return await handler(arg)
            finally:
                if task is not None:
                    self._tasks.discard(task)

        def call(arg: A) -> T:
            fut = asyncio.run_coroutine_threadsafe(on_loop(arg), loop)
            try:
                return fut.result()
            except concurrent.futures.CancelledError:
                raise HandlerCancelled() from None

        return call

    async def run(self, fn: Callable[[], T], *, handle_sigterm: bool | None = None) -> T:
        """Run the core's loop ``fn`` in the worker; a cancellation stops it, then waits.

        The core returns after the record in hand (whose handler is cancelled too, so it
        counts as not handled), runs its own way out (commit what was handled, abort an open
        transaction) and only then does the cancellation propagate: nothing of the core is
        left running behind the cancelled task.

        ``handle_sigterm`` turns SIGTERM into the core's ``stop()`` while it runs, as the sync
        ``run(handle_sigterm=...)``: None where the loop runs in the main thread and SIGTERM
        has no handler of the application's, True always (main thread only), False never.

        Raises:
            asyncio.CancelledError: The awaiting task (or the handler's) was cancelled.
            ConfigurationError: ``handle_sigterm=True`` on a loop outside the main thread.
        """
        loop = asyncio.get_running_loop()
        with self.sigterm_stops(loop, handle_sigterm):
            return await self._run(loop, fn)

    def sigterm_stops(
        self, loop: asyncio.AbstractEventLoop, handle_sigterm: bool | None
    ) -> contextlib.AbstractContextManager[None]:
        """SIGTERM (and the first Ctrl-C) stop the core while inside, as :meth:`run` says."""
        return loop_sigterm_stops(loop, self._stop, handle_sigterm)

    def begin(self) -> None:
        """A run begins: handlers may run again after an earlier run's cancellation."""
        self._cancelled = False

    def cancel_handlers(self) -> None:
        """Cancel every handler running on the loop for the core, and any about to begin."""
        self._cancelled = True
        for task in list(self._tasks):
            task.cancel()

    async def _run(self, loop: asyncio.AbstractEventLoop, fn: Callable[[], T]) -> T:
        self.begin()
        return await self.in_worker(loop, fn)

    async def in_worker(
        self, loop: asyncio.AbstractEventLoop, fn: Callable[[], T], *, stop: bool = True
    ) -> T:
        """``fn()`` in the worker; a cancellation waits for it, then propagates.

        On a cancellation the core is stopped (``stop``; False for its way out, which must
        run to its end) and every handler it runs on the loop is cancelled; ``fn`` finishes
        before the cancellation propagates, so nothing of the core is left running behind
        the cancelled task.

        Raises:
            asyncio.CancelledError: The awaiting task (or a handler's) was cancelled.
        """
        work = loop.run_in_executor(self._worker, fn)
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            if stop:
                self._stop()
            self.cancel_handlers()
            with contextlib.suppress(HandlerCancelled):
                await asyncio.shield(work)
            raise
        except HandlerCancelled:  # the handler's own task was cancelled, not ours
            raise asyncio.CancelledError() from None


_OK, _FAILED, _CANCELLED = 0, 1, 2


class HandlersAhead:
    """One crossing per polled batch: its handlers run on the loop, the core takes the outcomes.

    Crossing to the loop once per record costs two thread wake-ups, most of a record's time.
    Before the core handles a polled batch, :meth:`run` (worker thread) runs the batch's
    handlers on the loop in record order and keeps their outcomes;
    the core then calls :meth:`call` per record, as it calls any sync handler, and gets each
    outcome in turn, so every guarantee decision (commit order, failure policy, offsets,
    transactions) stays the core's. The loop stops at the first failure (the core's failure
    policy decides there; its retries cross one by one), at a stop request, and at a
    cancellation, after which the core sees the handled prefix, then
    :class:`HandlerCancelled` at the record whose handler was cancelled.

    Args:
        bridge: The client's :class:`LoopBridge`.
        handler: The user's async handler.
        loop: The running loop.
        prepare: Message → the record the handler gets (None: the core skips it, e.g. a
            poison pill it dead-letters itself), called in the worker for the whole batch
            (it may wait, e.g. for a schema registry), never on the loop. None: bytes in,
            each record a view made on the loop just before its handler (so it lives only
            as long as the handler keeps it: a batch of records made ahead outlives the
            garbage collector's youngest generation and makes it work).
        stopped: The core's stop flag.
        lists: The leading values are each a list or None (the Processor's outputs): the
            first record whose handler returns anything else ends the lead (its value goes
            to :meth:`call`, as the values after it), so that :meth:`take_leading` hands
            the core values it can emit as they are.
        finish: The core takes the batch's first records whose handler succeeded as finished
            without calling :meth:`call` for them (:attr:`finished` says how many): a core
            that needs nothing of a successful handler but that it succeeded (the Consumer)
            then walks only the rest, not every record a second time.

    Attributes:
        finished: After :meth:`run` with ``finish``: how many of the batch's first messages
            had their handler succeed, none skipped in between (0 otherwise).
    """

    def __init__(
        self,
        bridge: LoopBridge,
        handler: Callable[[ConsumerRecord], Awaitable[object]],
        loop: asyncio.AbstractEventLoop,
        prepare: Callable[[KafkaMessage], ConsumerRecord | None] | None,
        stopped: Callable[[], bool],
        *,
        finish: bool = False,
        lists: bool = False,
    ) -> None:
        self._per_record = bridge.sync_handler(handler, loop)
        self._batch = bridge.sync_handler(self._on_loop, loop)
        self._handler = handler
        self._prepare = prepare
        self._stopped = stopped
        self._finish = finish
        self._lists = lists
        self.finished = 0
        # the outcomes of one batch: the leading successes' values (aligned with the
        # batch's first messages: no tuple per record), then the others in order
        self._messages: list[KafkaMessage] = []
        self._values: list[object] = []
        self._next = 0
        self._ahead: collections.deque[tuple[KafkaMessage, int, object]] = collections.deque()

    def run(self, messages: list[KafkaMessage]) -> int:
        """In the worker, before the core handles ``messages``: one crossing for all.

        Returns:
            How many of ``messages`` (from the first) had their handler run or begun: the
            core finishes those even if a stop came meanwhile.
        """
        self.skip()
        if not messages:
            return 0
        prepare = self._prepare
        records = None if prepare is None else [prepare(message) for message in messages]
        return self._keep(messages, self._batch((messages, records)))

    async def run_here(self, messages: list[KafkaMessage]) -> int:
        """:meth:`run` for a core that runs on the loop's thread (bytes in): no crossing.

        Raises:
            asyncio.CancelledError: A handler was cancelled (the awaiting task with it): the
                core does not go on with the batch.
        """
        assert self._prepare is None  # a prepare may wait: never on the loop
        self.skip()
        if not messages:
            return 0
        outcome = await self._on_loop((messages, None))
        ran = self._keep(messages, outcome)
        if self._ahead and self._ahead[-1][1] == _CANCELLED:
            raise asyncio.CancelledError()
        return ran

    def _keep(
        self,
        messages: list[KafkaMessage],
        outcome: tuple[int, int, list[object], list[tuple[KafkaMessage, int, object]]],
    ) -> int:
        ran, self.finished, values, rest = outcome
        self._messages, self._values = messages, values
        self._ahead.extend(rest)
        return ran

    def take_leading(self) -> list[object]:
        """The values of the batch's leading successes, for a core that uses them itself.

        In order from the batch's first message; :meth:`call` then goes on after them. Only
        for a core that walks the batch from its first message and takes every value.
        """
        values = self._values
        self._next = len(values)
        return values

    def skip(self) -> None:
        """No outcomes ahead for the next batch: each record crosses on its own."""
        self._ahead.clear()
        self._messages, self._values, self._next = [], [], 0
        self.finished = 0

    def call(self, record: ConsumerRecord) -> object:
        """The core's sync handler: the outcome run ahead, else a crossing of its own."""
        k = self._next
        if k < len(self._values):
            if self._messages[k] is record.raw:
                self._next = k + 1
                return self._values[k]
            self.skip()  # out of step (the core rewound): cross per record from here
        ahead = self._ahead
        if ahead:
            message, kind, value = ahead.popleft()
            if message is record.raw:
                if kind == _OK:
                    return value
                if isinstance(value, BaseException):  # _FAILED: the first attempt failed
                    raise value  # a retry comes back and crosses
                raise HandlerCancelled()
            self.skip()  # out of step (the core rewound): cross per record from here
        return self._per_record(record)

    async def _on_loop(
        self, batch: tuple[list[KafkaMessage], list[ConsumerRecord | None] | None]
    ) -> tuple[int, int, list[object], list[tuple[KafkaMessage, int, object]]]:
        """The batch's handlers in order: (ran, finished, leading values, other outcomes).

        A record that ``prepare`` made None is skipped (the core handles it); without
        ``prepare`` each record is a view made just before its handler. The leading
        successes (no record skipped before them) run in a loop that does nothing else per
        record but a stop check, the handler's await and keeping its value; with ``finish``
        they are only counted (``finished``), their values dropped. The records after a
        skipped one keep an outcome tuple each.
        """
        messages, prepared = batch
        handler, stopped = self._handler, self._stopped
        n = len(messages)
        values: list[object] = []
        rest: list[tuple[KafkaMessage, int, object]] = []
        i = ran = lead = 0
        leading = True
        lists = self._lists
        try:
            keep = values.append  # with finish the values are dropped (one append each)
            record: ConsumerRecord | None = None
            while i < n:
                if stopped():
                    break
                if prepared is not None:
                    record = prepared[i]
                    if record is None:
                        break
                else:  # view(), inlined; reused as sdk.records.handle_run reuses it
                    if record is None or _refs(record) > 2:
                        record = _new(ConsumerRecord)
                    msg = messages[i]
                    record._key, record._value, record._raw = msg.key(), msg.value(), msg
                value = await handler(record)
                if lists and value is not None and type(value) is not list:
                    rest.append((messages[i], _OK, value))  # the core makes it a list
                    lead, leading = i, False
                    i += 1
                    ran = i
                    break
                keep(value)
                i += 1
            if leading:
                lead = ran = i
                leading = False
            while i < n:
                record = view(ConsumerRecord, messages[i]) if prepared is None else prepared[i]
                if record is not None:
                    if stopped():  # the rest is not handled: read again (or lost at_most_once)
                        break
                    value = await handler(record)
                    rest.append((messages[i], _OK, value))
                    ran = i + 1
                i += 1
        except asyncio.CancelledError:  # the handled prefix still counts
            rest.append((messages[i], _CANCELLED, None))
            ran, lead = i + 1, i if leading else lead
        except Exception as exc:
            rest.append((messages[i], _FAILED, exc))
            ran, lead = i + 1, i if leading else lead
        if self._finish:
            return ran, lead, [], rest
        return ran, 0, values, rest
