"""``AsyncProcessor.run`` on the event loop's own thread (bytes in, one record at a time).

The thread bridge runs the sync Processor in a worker thread and crosses to the loop once per
polled batch to run its handlers; measured on a 2-core machine, that crossing and the batch's
messages made in one thread and handled in the other kept the AsyncProcessor at 0.6-0.8 of the
sync Processor. Here the Processor's own steps run in the awaiting task, and the worker thread
(which owns the clients' blocking calls) only waits:

- for the run to begin and end (the clients opened, the transactional producer initialised;
  the final commit, the close);
- for records when none are queued: a poll on the loop takes what librdkafka has queued without
  waiting; only a poll that found nothing goes to the worker, which waits as the sync
  Processor's poll does (never past the pending records' commit);
- for every commit, every recovery (abort, rewind, a new producer) and every handler failure:
  the Processor's own code does them there, exactly as in the sync run.

A polled batch's handlers run first, in record order, up to the first that fails (the
bridge's :class:`~sdk.aio._bridge.HandlersAhead`, without its crossing); the Processor's hot
loop then queues their outputs on the loop, stopping at each commit point to commit in the
worker. The records from the first failure on (or from a stop request) go through the
Processor's handling in the worker, each handler crossing back to the loop, so its failure
policy (retries with backoff, dead letter, stop) runs unchanged.

Found while building it: a batch whose handlers never suspend would hold the loop for as
long as records keep coming; the loop's other tasks get a turn once per batch.

A batch polled while the producer's local queue is half full or more (half of
``queue.buffering.max.messages``: the broker is slow to take the outputs) is queued in the
worker, as a full queue makes the queuing wait for room. A poll on the loop also runs the
rebalance callbacks librdkafka has due: a revoke's commit then holds the loop for its round
trip, as on the AsyncConsumer.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable, Iterable, Sequence
from typing import cast

from sdk._client import ConsumerClient, KafkaMessage
from sdk.aio._bridge import HandlersAhead, LoopBridge
from sdk.aio._on_loop import within_run
from sdk.errors import ClosedError, KafkaClientError
from sdk.lifecycle import Lifecycle
from sdk.processor import Processor, ProcessorStats
from sdk.records import ConsumerRecord, Output

__all__ = ["run_processor_on_loop"]


async def run_processor_on_loop(
    processor: Processor,
    ahead: HandlersAhead,
    call: Callable[[ConsumerRecord], Iterable[Output]],
    bridge: LoopBridge,
    *,
    max_duration_s: float | None,
    handle_sigterm: bool | None,
) -> ProcessorStats:
    """Run ``processor`` with the handlers ``ahead`` runs, on this loop's thread.

    ``call`` is the sync handler the Processor's failure path calls (it takes the outcomes
    ``ahead`` kept, or crosses to the loop).

    Raises:
        asyncio.CancelledError: The awaiting task was cancelled (after the open transaction
            was aborted and the Processor closed).
        ClosedError, ProducerFencedError, HandlerError, KafkaClientError: As the sync ``run``.
    """
    if processor.state is Lifecycle.CLOSED:
        raise ClosedError("Processor.run() after close()")
    processor._handling.use(call, None)
    loop = asyncio.get_running_loop()
    deadline = None if max_duration_s is None else time.monotonic() + max_duration_s
    body = functools.partial(_Steps(processor, ahead, bridge, loop).run, deadline=deadline)
    try:
        running = processor._engine.running(False)  # SIGTERM is the loop's (within_run)
        await within_run(bridge, loop, running, body, handle_sigterm=handle_sigterm)
    finally:
        await bridge.in_worker(loop, processor.close, stop=False)
    return processor.stats


class _Steps:
    """The sync Processor's ``_loop`` and ``_step``, on the loop (the module docstring)."""

    def __init__(
        self,
        processor: Processor,
        ahead: HandlersAhead,
        bridge: LoopBridge,
        loop: asyncio.AbstractEventLoop,
    ) -> None:
        self._proc = processor
        self._ahead = ahead
        self._bridge = bridge
        self._loop = loop

    async def run(self, client: ConsumerClient, *, deadline: float | None) -> None:
        proc, bridge, loop = self._proc, self._bridge, self._loop
        commits, source = proc._commits, proc._engine.source
        stopped, limit = proc._engine.stopped, proc._poll_limit
        proc.state = Lifecycle.RUNNING
        try:
            on_loop = False  # until records came, every poll waits in the worker
            while not stopped():
                if deadline is not None and time.monotonic() >= deadline:
                    break
                if on_loop:
                    records = source.poll(client, limit, 0.0)
                else:
                    wait_s = commits.wait_s(proc._poll_timeout)
                    poll = functools.partial(source.poll, client, limit, wait_s)
                    records = await bridge.in_worker(loop, poll)
                on_loop = bool(records)  # nothing queued: the next poll waits in the worker
                if records:  # (admit: only at_most_once commits first, which runs bridged)
                    await self._batch(records)
                if commits.due():
                    await bridge.in_worker(loop, commits.commit_or_recover)
                if on_loop:
                    await asyncio.sleep(0)  # the loop's other tasks, once per batch
        except BaseException as exc:
            # the open transaction aborted now, as the sync _loop does
            abort = functools.partial(commits.abort_open, exc)
            await bridge.in_worker(loop, abort, stop=False)
            raise
        proc.state = Lifecycle.STOPPING  # the engine's end of the run commits

    async def _batch(self, records: list[KafkaMessage]) -> None:
        """One polled batch: its handlers, then its outputs and positions into the session."""
        proc, bridge, loop, ahead = self._proc, self._bridge, self._loop, self._ahead
        handling, commits = proc._handling, proc._commits
        if proc._tel.tracing_enabled():
            # each record crosses on its own, so its ``process`` span times the real handler
            ahead.skip()
            await bridge.in_worker(loop, lambda: handling.handle(records))
            return
        await ahead.run_here(records)
        # lists=True: each leading value is a list or None
        computed = cast("Sequence[Iterable[Output] | None]", ahead.take_leading())
        if proc._txn.output.queue_half_full():
            # the outputs may find the producer's queue full and wait for room: not on the loop
            await bridge.in_worker(loop, lambda: handling.handle(records, computed))
            return
        n, lead, i = len(records), len(computed), 0
        failed: KafkaClientError | None = None
        while i < lead:
            i, failed = handling.run_until_due(records, i, lead, computed)
            if failed is not None:
                break
            if i < lead and not await bridge.in_worker(loop, commits.commit_or_recover):
                return  # rewound: the rest of the batch is read again
        if failed is None and i < n:
            # from the first failure (or a stop) on: the Processor's own handling, its
            # failure policy included, each handler crossing back to the loop
            rest = records[i:]
            await bridge.in_worker(loop, lambda: handling.handle(rest))
            return
        if failed is None:
            failed = handling.serve()  # delivery reports, once per batch
        if failed is not None:
            await bridge.in_worker(loop, functools.partial(commits.recover, failed))
