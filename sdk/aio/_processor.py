"""The asyncio read-process-write: the SDK :class:`~sdk.processor.Processor` with async handlers.

No second transaction loop: the sync Processor (one transactional session, KIP-447 group
metadata, the commit order, every recovery path, rebalance callbacks) does all of it. With
bytes in (no deserializer, exactly_once or at_least_once, one record at a time) its steps run
on the event loop's own thread and everything that waits runs in one worker thread
(:mod:`sdk.aio._processor_loop`). Otherwise the Processor runs unchanged in the worker thread
and only the handler runs on the event loop, one record at a time, in the order of the polled
batch (ordering per partition is the sync Processor's). Each polled batch then
crosses to the loop once: its handlers run in order up to the first failure, then the core
takes their outcomes record by record (a failed record's retries cross one by one). A
handler may therefore run before the commit of an earlier record of its batch (as a handler
of a later batch may run before an aborted transaction is redone); nothing is produced or
committed outside the core. Cancelling the task awaiting :meth:`AsyncProcessor.run`
stops the loop and cancels the handler in progress; exactly_once then aborts the open
transaction before the Processor closes (nothing of it is visible, and read_committed
readers are not held back until its timeout), and the cancellation propagates once the worker
is done.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Literal, TypedDict, Unpack, cast

from sdk._client import ConsumerClient, KafkaMessage, ProducerClient
from sdk._config import ClientConfig
from sdk._deprecation import moved, renamed
from sdk.aio._bridge import HandlersAhead, LoopBridge
from sdk.aio._processor_loop import run_processor_on_loop
from sdk.consumer import ConsumerRecord, Ordering
from sdk.consumer.engine import check_concurrency
from sdk.errors import ConfigurationError
from sdk.observability import Telemetry
from sdk.partitioners import Partitioner
from sdk.processor import Processor, ProcessorStats, Progress
from sdk.profiles import Guarantee, ProcessingProfile
from sdk.records import Output
from sdk.serialization import Deserializer, Serializer

__all__ = ["AsyncProcessor"]

CROSSING = 250
"""Most records an AsyncProcessor polls at once, so runs ahead on the loop in one crossing."""

AsyncHandler = Callable[[ConsumerRecord], Awaitable[Iterable[Output] | None]]
# the sync handler the core runs; a None the async handler returns is taken as no output
# by the core too (it makes a list of ``outputs or ()``)
Outputs = Callable[[ConsumerRecord], Iterable[Output]]


class ProcessorOptions(TypedDict, total=False):
    """The keyword arguments of :class:`~sdk.processor.Processor`, passed on by AsyncProcessor."""

    transactional_id: str | None
    instance_id: str | None
    key_deserializer: str | Deserializer
    value_deserializer: str | Deserializer
    key_serializer: str | Serializer
    value_serializer: str | Serializer
    on_fenced: Literal["raise", "recreate"]
    poll_timeout_s: float
    partitioner: str | Partitioner | None
    producer_factory: Callable[[ClientConfig], ProducerClient] | None
    consumer_factory: Callable[[ClientConfig], ConsumerClient]
    telemetry: Telemetry | Literal[False] | None
    on_progress: Callable[[Progress], object] | None
    verify_cluster: bool


class AsyncProcessor:
    """Consume → ``await handler(record)`` → produce, under a :class:`ProcessingProfile`.

    Example::

        async def enrich(record):
            data = await fetch(record.key)
            return [OutputRecord("enriched", data, record.key)]

        async with AsyncProcessor(profile, ["orders"], instance_id="pod-0") as proc:
            await proc.run(enrich)

    Like the sync Processor it runs once: after :meth:`run` returns it is closed.

    Args:
        profile: The processing profile (exactly_once, at_least_once or at_most_once).
        input_topics: Topics to subscribe to.
        handler: Deprecated, removed in 0.3: give the handler to :meth:`run`.
        **options: The :class:`~sdk.processor.Processor` keyword arguments (``instance_id``,
            ``transactional_id``, ``on_fenced``, ``partitioner``, ``telemetry``, ...).

    Raises:
        ConfigurationError: As the sync Processor.
    """

    def __init__(
        self,
        profile: ProcessingProfile,
        input_topics: Sequence[str],
        handler: AsyncHandler | None = None,
        **options: Unpack[ProcessorOptions],
    ) -> None:
        if handler is not None:
            moved("handler", "AsyncProcessor()", "run()")
        self._handler = handler
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="aio-processor")
        self._ahead: HandlersAhead | None = None  # set by run()
        self._sync = Processor(profile, input_topics, **options)
        self._sync._before_handle = self._run_ahead
        # a crossing's outputs (a list and a record each) live until the core emits them: at
        # most CROSSING records per poll keeps them under CPython's youngest-generation
        # threshold (700 allocations), so they do not set off collections that promote them
        # (measured: 355 collections per 200,000 records at 500, 28 at 250)
        self._sync._poll_limit = min(self._sync._poll_limit, CROSSING)
        self._bridge = LoopBridge(self._worker, self._sync.stop)
        self._finished: asyncio.Event | None = None  # set while a run is in progress
        self.profile = profile

    async def __aenter__(self) -> AsyncProcessor:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop a run in progress and wait until it committed and closed (idempotent)."""
        self._sync.stop()
        if self._finished is not None:
            await self._finished.wait()
            return
        self._sync.close()  # never ran: no client was created, nothing blocks
        self._worker.shutdown(wait=False)

    @property
    def stats(self) -> ProcessorStats:
        """The sync Processor's counters."""
        return self._sync.stats

    @property
    def committed(self) -> dict[tuple[str, int], int]:
        """Next offset per owned partition, as last committed (the sync Processor's)."""
        return self._sync.committed

    @property
    def assignment(self) -> list[tuple[str, int]]:
        """The ``(topic, partition)`` pairs owned now, sorted."""
        return self._sync.assignment

    @property
    def sync(self) -> Processor:
        """The sync Processor underneath."""
        return self._sync

    def stop(self) -> None:
        """Ask :meth:`run` to commit what it has and return (safe from any thread)."""
        self._sync.stop()

    async def run(
        self,
        handler: AsyncHandler | None = None,
        *,
        max_duration_s: float | None = None,
        handle_sigterm: bool | None = None,
        max_seconds: float | None = None,
        concurrency: int = 1,
        ordering: Ordering = "key",
    ) -> ProcessorStats:
        """Await ``handler(record)`` per record until stopped; commit and close on the way out.

        Stopped: :meth:`stop`, ``max_duration_s``, SIGTERM or cancellation. With
        ``concurrency=N`` up to N handlers of a polled batch are awaited at the same time,
        each key's records one after another, then the batch's outputs go through the
        transaction in offset order (the sync ``run(concurrency=N)``, docs/concurrency.md).

        Args:
            handler: ``async record -> iterable of OutputRecord`` (or None). Required unless
                given to the (deprecated) constructor.
            max_duration_s: Return after this many seconds (the pending work is committed
                first).
            handle_sigterm: SIGTERM stops the run (commit, then return). None (default): when
                the loop runs in the main thread and the application has no SIGTERM handler
                of its own; True: always (the loop must run in the main thread); False: never.
            max_seconds: Deprecated name of ``max_duration_s``, removed in 0.3.
            concurrency: Handlers awaited at the same time (1: one after another).
            ordering: ``"key"``, ``"partition"`` or ``"unordered"`` (see the sync ``run``).

        Raises:
            ConfigurationError: No handler (or one here and one in the constructor),
                ``handle_sigterm=True`` outside the main thread, or a bad ``concurrency`` or
                ``ordering``.
            asyncio.CancelledError: The awaiting task was cancelled (after the worker
                committed or aborted and closed).
            ProducerFencedError, HandlerError, KafkaClientError: As the sync ``run``.
        """
        limit = renamed(
            "AsyncProcessor.run", "max_seconds", max_seconds, "max_duration_s", max_duration_s
        )
        if handler is not None and self._handler is not None:
            raise ConfigurationError(
                "handler: given to both AsyncProcessor() and run(); give it to run() only",
                field="handler",
            )
        handler = handler or self._handler
        if handler is None:
            raise ConfigurationError("handler: give the handler to run(handler)", field="handler")
        loop = asyncio.get_running_loop()
        if concurrency != 1:
            # each handler thread of the sync run waits for its coroutine on the loop; no
            # batch run ahead (the pool runs the batch's handlers, at the same time)
            self._sync._before_handle = None
            self._sync._handling.precomputed = None
            self._sync._poll_limit = self._sync.profile.consumer.batch_size
            call: Outputs = cast(Outputs, self._bridge.sync_handler(handler, loop))
            on_loop = False
        else:
            decoder = self._sync._handling.decoder
            # bytes in, one record at a time, no commit before handling: the Processor's
            # steps on this loop's thread (sdk/aio/_processor_loop.py)
            on_loop = decoder is None and self._sync.guarantee is not Guarantee.AT_MOST_ONCE
            self._ahead = HandlersAhead(
                self._bridge,
                handler,
                loop,
                # the record the core will hand over: decoded when the Processor has
                # deserializers (a poison pill, None, is the core's to handle)
                prepare=None if decoder is None else decoder.try_decode,
                stopped=self._sync._engine.stopped,
                lists=True,  # outputs the core's hot loop can emit as they are
            )
            call = self._call
        core: Awaitable[ProcessorStats]
        if on_loop:
            check_concurrency(concurrency, ordering, None)  # the sync run's check of ordering
            assert self._ahead is not None
            self._sync._before_handle = None
            core = run_processor_on_loop(
                self._sync,
                self._ahead,
                call,
                self._bridge,
                max_duration_s=limit,
                handle_sigterm=handle_sigterm,
            )
        else:
            if concurrency == 1:
                # the core's hot loop emits the leading outputs itself (no view, no call per
                # record); what follows them comes through call()
                self._sync._handling.precomputed = self._leading_outputs
            # SIGTERM is the bridge's (on the loop); the core runs in a worker thread
            loop_of_core = functools.partial(
                self._sync.run,
                call,
                max_duration_s=limit,
                handle_sigterm=False,
                concurrency=concurrency,
                ordering=ordering,
            )
            core = self._bridge.run(loop_of_core, handle_sigterm=handle_sigterm)
        self._finished = asyncio.Event()
        try:
            return await core
        finally:
            self._sync._handling.precomputed = None
            self._worker.shutdown(wait=False)
            self._finished.set()

    def _run_ahead(self, msgs: list[KafkaMessage]) -> None:
        """In the worker, before the core handles a polled batch: one crossing for all of it.

        With tracing on, each record crosses on its own, so its ``process`` span times the
        real handler.
        """
        assert self._ahead is not None  # the Processor calls it only inside run()
        if self._sync._tel.tracing_enabled():
            self._ahead.skip()
        else:
            self._ahead.run(msgs)  # the Processor handles every polled record: no stop check

    def _leading_outputs(self) -> Sequence[Iterable[Output] | None]:
        assert self._ahead is not None  # the Processor calls it only inside run()
        # lists=True: each value is a list or None
        return cast("Sequence[Iterable[Output] | None]", self._ahead.take_leading())

    def _call(self, record: ConsumerRecord) -> Iterable[Output]:
        assert self._ahead is not None  # the Processor calls it only inside run()
        return cast("Iterable[Output]", self._ahead.call(record))
