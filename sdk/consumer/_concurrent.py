"""Key-ordered concurrency for ``Consumer.run``: slow handlers on N threads.

A handler that waits on I/O (an HTTP call, a database) leaves a one-record-at-a-time consumer
idle; handing records to a plain thread pool breaks per-key order and stores offsets of records
not yet handled (a crash loses them). Here:

* :class:`KeyScheduler` keeps a queue per *ordering key* (``key``: the record key within its
  partition; ``partition``; ``unordered``: every record its own key) and lets at most one
  record of a key run at a time, in offset order; up to N keys run at once on N worker threads.
* :class:`ConcurrentRun` feeds it the batches the engine polls, and on the run's thread (the
  one that polls) turns finished records into offsets: at_least_once stores, per partition, the
  offset after the longest prefix of finished records (:class:`~sdk.consumer._offsets.AckTracker`),
  so a crash repeats only what was in flight or finished above that prefix; at_most_once has
  committed each batch before it was fed (nothing is ever repeated).
* Backpressure: at most ``max_buffered`` records are taken and not finished; when full, a
  poll takes only as many as finished meanwhile. If none finishes for half a second, the
  assigned partitions are paused and polling goes on (rebalances are served,
  ``max.poll.interval.ms`` is never exceeded by a slow handler); they are resumed at half of
  ``max_buffered``.
* Rebalance: a revoked partition's records not started are dropped (the new owner reads them
  from the committed offset); the ones running are waited for (bounded), and the finished
  prefix is committed before the partition goes. A lost partition's records are dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import TracebackType

from confluent_kafka import TopicPartition

from sdk._client import ConsumerClient, KafkaMessage
from sdk.consumer._commits import OffsetKeeper
from sdk.consumer._failure import FailurePath
from sdk.consumer._loop import ConsumeLoop
from sdk.consumer._records import ConsumerRecord
from sdk.consumer._scheduler import ORDERINGS, TP, KeyScheduler, Ordering, timed_out
from sdk.errors import ConfigurationError
from sdk.observability import Telemetry
from sdk.profiles import Guarantee

__all__ = ["ConcurrentRun", "Ordering", "check_concurrency"]

_log = logging.getLogger("sdk.consumer")


REVOKE_WAIT_S = 30.0
"""How long a revoke waits for the running records of the revoked partitions."""
PAUSE_AFTER_S = 0.5
"""Full and no record finished for this long: the partitions are paused (and polled)."""
DRAIN_POLL_S = 0.2
"""While a run ends waiting for its handlers: how often it polls its paused partitions."""
_BUFFER_PER_WORKER = 100
_MIN_BUFFER = 1_000


def check_concurrency(
    concurrency: int,
    ordering: str,
    max_buffered: int | None,
    handler_timeout_s: float | None = None,
) -> tuple[Ordering, int]:
    """Validate ``run()``'s concurrency arguments; return the ordering and the buffer bound.

    Raises:
        ConfigurationError: ``concurrency`` < 1, an unknown ordering, ``max_buffered`` below
            ``concurrency``, or a ``handler_timeout_s`` without ``concurrency`` > 1 or not > 0.
    """
    if handler_timeout_s is not None and (concurrency == 1 or not handler_timeout_s > 0):
        raise ConfigurationError(
            "handler_timeout_s: needs concurrency > 1 (a handler is given up on a worker "
            f"thread) and a number > 0, got {handler_timeout_s!r}",
            field="handler_timeout_s",
        )
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise ConfigurationError(
            f"concurrency: must be an int >= 1, got {concurrency!r}", field="concurrency"
        )
    if ordering not in ORDERINGS:
        raise ConfigurationError(
            f"ordering: must be one of {', '.join(ORDERINGS)}, got {ordering!r}",
            field="ordering",
        )
    bound = max_buffered
    if bound is None:
        bound = max(_MIN_BUFFER, _BUFFER_PER_WORKER * concurrency)
    if isinstance(bound, bool) or not isinstance(bound, int) or bound < concurrency:
        raise ConfigurationError(
            f"max_buffered: must be an int >= concurrency ({concurrency}), got {max_buffered!r}",
            field="max_buffered",
        )
    return ordering, bound


class ConcurrentRun:
    """One ``Consumer.run(handler, concurrency=N)``: the workers, offsets, pause and resume.

    Used as a context manager around the engine's batches: leaving it (normally or by an
    exception) stops the workers after the records they have in hand, stores what finished,
    and rewinds what was taken and not handled so it is read again.

    Args:
        loop: The Consumer's engine.
        failure: Decoding and the failure policy.
        offsets: The Consumer's offset keeper.
        handler: The user's record handler.
        concurrency: Worker threads.
        ordering: Which records must not run at the same time.
        max_buffered: Records taken and not finished at which the partitions are paused.
        group_id: For telemetry spans.
        handler_timeout_s: A record in its handler this long goes through the failure
            policy (dead letter, or stop); None: no limit.
    """

    def __init__(
        self,
        loop: ConsumeLoop[ConsumerClient],
        failure: FailurePath,
        offsets: OffsetKeeper,
        handler: Callable[[ConsumerRecord], object],
        *,
        concurrency: int,
        ordering: Ordering,
        max_buffered: int,
        group_id: str,
        handler_timeout_s: float | None = None,
    ) -> None:
        self._loop = loop
        self._failure = failure
        self._offsets = offsets
        self._handler = handler
        self._alo = offsets.guarantee is Guarantee.AT_LEAST_ONCE
        self._scheduler = KeyScheduler(ordering)
        self._high = max_buffered
        self._low = max_buffered // 2
        self._paused: set[TP] = set()
        self._group = group_id
        self._tel: Telemetry | None = None
        self._timeout_s = handler_timeout_s
        self._concurrency = concurrency

    def __enter__(self) -> ConcurrentRun:
        self._offsets.release = self._release
        self._offsets.load_done = self._alo
        self._scheduler.start(self._concurrency, self._call, self._loop.stop, "sdk-handler")
        return self

    # ------------------------------------------------------------------ the engine's hooks
    def feed(self, messages: list[KafkaMessage]) -> None:
        """A polled (and admitted) batch: track it (at_least_once) and queue it."""
        self._raise_error()
        self._tel = self._loop.observed()
        if self._alo:
            offsets = self._offsets
            for message in messages:
                offsets.track(message)
            if offsets.done_above:
                messages = self._skip_done(messages)
        self._scheduler.add(messages)
        self._loop.in_flight = 0  # counted by the scheduler from here
        self._settle()

    def before_poll(self, client: ConsumerClient) -> None:
        """Between polls: store what finished; wait for room, or pause, when full.

        Full (``max_buffered`` records taken and not finished): wait up to
        :data:`PAUSE_AFTER_S` for one to finish, then take only as many as there is room for
        (:meth:`room`). Only if none finished does the run pause its partitions and poll on
        (serving rebalances, never exceeding ``max.poll.interval.ms``): librdkafka fetches
        again only about a second after a resume, so pausing at every fill would idle the
        handlers. Resumed at half of ``max_buffered``.
        """
        self._raise_error()
        self._expire()
        self._settle()
        s, high = self._scheduler, self._high
        if s.pending + s.running >= high:
            s.wait(lambda: s.error is not None or s.pending + s.running < high, PAUSE_AFTER_S)
            self._raise_error()
            self._settle()
        outstanding = s.pending + s.running
        if outstanding >= high:
            self._pause(client)
        elif self._paused and outstanding <= self._low:
            self._resume(client)

    def room(self) -> int:
        """How many records the next poll may take (at least 1: paused partitions give none)."""
        return max(self._high - self._scheduler.pending - self._scheduler.running, 1)

    def busy(self) -> bool:
        """Records are taken and not finished: the run is not idle."""
        return self._scheduler.pending + self._scheduler.running > 0

    def finish(self) -> None:
        """The engine stopped polling (limit, idle, stop): finish what the run should.

        at_least_once after a stop: the records running are finished, the others are read
        again; otherwise every record taken is handled before the run returns. Meanwhile the
        partitions are paused and polled every :data:`DRAIN_POLL_S`, so rebalances are served
        and a slow handler does not exceed ``max.poll.interval.ms``.

        Raises:
            Exception: The error that halted a worker (HandlerError, SerializationError, ...).
        """
        s, loop = self._scheduler, self._loop
        while True:
            self._raise_error()
            if self._alo and loop.stopped():
                s.halt()
                if s.wait(lambda: s.running == 0, DRAIN_POLL_S):
                    break
            elif s.wait(lambda: s.error is not None or s.running + s.pending == 0, DRAIN_POLL_S):
                break
            self._expire()
            self._poll_paused()
        self._raise_error()

    def _poll_paused(self) -> None:
        """One poll with every assigned partition paused: callbacks served, no new work.

        A partition assigned by this very poll is not paused yet: what it returns is taken
        as any polled batch (and paused before the next poll).
        """
        client = self._loop.client
        if client is None:
            return
        self._settle()
        self._pause(client, full=False)
        messages = self._loop.source.poll(client, self._loop.batch_size, 0)
        if messages:
            messages = self._loop.commits.admit(client, messages)
            if messages:
                self.feed(messages)

    # ------------------------------------------------------------------ leaving
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        scheduler = self._scheduler
        try:
            scheduler.shutdown()
            client = self._loop.client
            left = scheduler.drop() + scheduler.unfinished
            if client is not None:
                self._settle()
                if self._alo:
                    # taken and not finished: seek back to them (or the next run of this
                    # consumer would go on after them); the ones finished above are skipped
                    self._offsets.rewind_open(client, keep_done=True)
                if self._paused:
                    self._resume(client)
            if not self._alo:
                # committed before handling and never handled: counted by end_run as abandoned
                self._loop.in_flight = len(left)
        finally:
            self._offsets.release = None
            self._offsets.load_done = False

    # ------------------------------------------------------------------ internals
    def _call(self, message: KafkaMessage) -> bool:
        """Handle one record on a worker; True if the handler succeeded at its first attempt."""
        tel = self._tel
        if tel is None:
            return self._handle(message)
        with tel.process_span(
            message.topic(),
            message.partition(),
            message.offset(),
            message.key(),
            self._group,
            message.headers(),
        ):
            return self._handle(message)

    def _handle(self, message: KafkaMessage) -> bool:
        failure = self._failure
        record = failure.decode(message)  # a poison pill: dead-lettered (None) or raised
        if record is None:
            return False
        try:
            self._handler(record)
        except Exception as first:
            failure.handle(self._handler, record, [message], first)
            return False
        return True

    def _expire(self) -> None:
        """Records in their handler past ``handler_timeout_s``: through the failure policy.

        Each one's thread is abandoned and replaced (the call cannot be interrupted; what it
        does later is ignored); the record is dead-lettered and counts as done, or the run
        stops with :class:`HandlerError` (the record is read again, as for any failure).

        Raises:
            HandlerError: ``on_failure="stop"`` or no dead-letter topic.
        """
        if self._timeout_s is None:
            return
        for message in self._scheduler.expire(self._timeout_s):
            record = self._failure.decoder.try_decode(message) or message
            error = timed_out(message, self._timeout_s, record)
            try:
                self._failure.give_up(error, message, attempts=1)  # dead letter, or raise
            except BaseException:
                # not done: counted as abandoned (at_most_once), read again (at_least_once)
                self._scheduler.add_unfinished(message)
                raise
            client = self._loop.client
            if self._alo and client is not None:
                self._offsets.acked(client, [message])

    def _skip_done(self, messages: list[KafkaMessage]) -> list[KafkaMessage]:
        """Take out records finished before a restart, rebalance or rewind; mark them done."""
        done_above = self._offsets.done_above
        todo: list[KafkaMessage] = []
        skipped: list[KafkaMessage] = []
        for message in messages:
            done = done_above.get((message.topic(), message.partition()))
            if done and message.offset() in done:
                done.discard(message.offset())
                skipped.append(message)
            else:
                todo.append(message)
        if skipped:
            self._failure.stats.skipped_done += len(skipped)
            client = self._loop.client
            if client is not None:
                self._offsets.acked(client, skipped)
        return todo

    def _settle(self) -> None:
        """Finished records: count them; at_least_once stores the finished prefixes."""
        finished = self._scheduler.take_finished()
        if not finished:
            return
        self._failure.stats.handled += sum(1 for _, handled in finished if handled is True)
        client = self._loop.client
        if self._alo and client is not None:
            self._offsets.acked(client, [message for message, _ in finished])

    def _release(
        self, client: ConsumerClient, partitions: list[TopicPartition], lost: bool
    ) -> None:
        """A rebalance takes ``partitions``: drop their records not started.

        On revoke, wait for their running ones and store the finished prefix (the keeper then
        commits it).
        """
        gone = {(tp.topic, tp.partition) for tp in partitions}
        self._paused -= gone
        scheduler = self._scheduler
        if not self._alo:
            return  # committed before handling: finishing them repeats nothing
        scheduler.drop(gone)
        if not lost and not scheduler.wait(
            lambda: scheduler.running_in(gone) == 0, REVOKE_WAIT_S, "revoked partitions"
        ):
            _log.warning(
                "revoke: records of %s still running after %.0fs; their offsets are not "
                "committed (the new owner handles them again)",
                sorted(gone),
                REVOKE_WAIT_S,
            )
        self._settle()

    def _pause(self, client: ConsumerClient, *, full: bool = True) -> None:
        """Pause the assigned partitions not paused yet (``full``: counted as backpressure)."""
        new = {(tp.topic, tp.partition) for tp in client.assignment()} - self._paused
        if new:
            client.pause([TopicPartition(t, p) for t, p in sorted(new)])
            if full and not self._paused:
                self._failure.stats.paused += 1
            self._paused |= new

    def _resume(self, client: ConsumerClient) -> None:
        assigned = {(tp.topic, tp.partition) for tp in client.assignment()}
        paused = sorted(self._paused & assigned)
        if paused:
            client.resume([TopicPartition(t, p) for t, p in paused])
        self._paused.clear()

    def _raise_error(self) -> None:
        error = self._scheduler.error
        if error is not None:
            raise error
