"""Which record of a concurrent run starts next: per ordering key one at a time, in order.

The scheduling part of ``Consumer.run(concurrency=N)`` (:mod:`sdk.consumer._concurrent`):
pure threading, no Kafka calls.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Literal

from sdk._client import KafkaMessage
from sdk.errors import HandlerError

__all__ = ["ORDERINGS", "TP", "KeyScheduler", "Ordering", "ordering_key", "timed_out"]

_log = logging.getLogger("sdk.consumer")

Ordering = Literal["key", "partition", "unordered"]
ORDERINGS: tuple[Ordering, ...] = ("key", "partition", "unordered")
TP = tuple[str, int]
_REPORT_EVERY_S = 10.0


def ordering_key(ordering: Ordering) -> Callable[[KafkaMessage], Hashable]:
    """What must not run at the same time as a record: its key, its partition, itself."""
    if ordering == "key":
        return lambda m: (m.topic(), m.partition(), m.key())
    if ordering == "partition":
        return lambda m: (m.topic(), m.partition())
    return lambda m: (m.topic(), m.partition(), m.offset())


def timed_out(message: KafkaMessage, timeout_s: float, record: object) -> HandlerError:
    """The error of a record given up by :meth:`KeyScheduler.expire` (``record``: its view)."""
    where = f"{message.topic()}[{message.partition()}]@{message.offset()}"
    _log.error("handler still running after %.1fs on %s: given up", timeout_s, where)
    return HandlerError(
        f"handler still running after {timeout_s:g}s (handler_timeout_s) on {where}; its "
        "thread was abandoned",
        record=record,
        attempts=1,
    )


class KeyScheduler:
    """Which record runs next: one record per ordering key at a time, in offset order.

    A key is in ``_queues`` while it has records waiting or one running (an empty deque: one
    running, none waiting); it is in ``_ready`` when it has records waiting and none running.
    All state is guarded by one lock; workers wait on ``_work``, the run's thread on
    ``_change``.

    Args:
        ordering: Which records must not run at the same time.
    """

    def __init__(self, ordering: Ordering) -> None:
        self._key_of = ordering_key(ordering)
        self._lock = threading.Lock()
        self._work = threading.Condition(self._lock)
        self._change = threading.Condition(self._lock)
        self._queues: dict[Hashable, deque[KafkaMessage]] = {}
        self._ready: deque[Hashable] = deque()
        self._running: dict[TP, int] = {}
        self._finished: list[tuple[KafkaMessage, object]] = []
        self.pending = 0
        """Records taken and not started."""
        self.running = 0
        """Records in a handler now."""
        self.error: BaseException | None = None
        self.failed: KafkaMessage | None = None
        self.unfinished: list[KafkaMessage] = []
        """Records whose handling raised (the first one's error is :attr:`error`)."""
        self._halted = False
        self._closed = False
        # records in a handler now, by slot: (message, key, since when, on which thread)
        self._slots: dict[int, tuple[KafkaMessage, Hashable, float, threading.Thread]] = {}
        self._next_slot = 0
        self._abandoned: set[int] = set()
        self._abandoned_threads: set[threading.Thread] = set()  # never joined
        self._threads: list[threading.Thread] = []
        self._worker_args: tuple[Callable[[KafkaMessage], object], Callable[[], None]] | None = None
        self._name = "sdk-handler"

    # ------------------------------------------------------------------ the run's thread
    def add(self, messages: list[KafkaMessage]) -> None:
        """Queue records (in offset order per partition) behind their keys."""
        key_of, queues = self._key_of, self._queues
        with self._lock:
            woken = 0
            for message in messages:
                key = key_of(message)
                queue = queues.get(key)
                if queue is None:
                    queues[key] = deque((message,))
                    self._ready.append(key)
                    woken += 1
                else:
                    queue.append(message)
            self.pending += len(messages)
            if woken:
                self._work.notify(woken)

    def take_finished(self) -> list[tuple[KafkaMessage, object]]:
        """Records finished since the last call, with what ``call`` returned for each."""
        with self._lock:
            finished, self._finished = self._finished, []
        return finished

    def halt(self) -> None:
        """Start no more records (the ones running go on)."""
        with self._lock:
            self._halted = True

    def drop(self, partitions: set[TP] | None = None) -> list[KafkaMessage]:
        """Take out the records not started (of ``partitions``; None: all); return them."""
        dropped: list[KafkaMessage] = []
        emptied: set[Hashable] = set()
        with self._lock:
            for key, queue in list(self._queues.items()):
                if partitions is None:
                    gone = list(queue)
                else:
                    gone = [m for m in queue if (m.topic(), m.partition()) in partitions]
                if not gone:
                    continue
                dropped.extend(gone)
                if len(gone) == len(queue):
                    queue.clear()
                    emptied.add(key)
                else:
                    kept = [
                        m for m in queue if (m.topic(), m.partition()) not in (partitions or ())
                    ]
                    queue.clear()
                    queue.extend(kept)
            if emptied:
                # a ready key is not running: with nothing left it is forgotten, and taken out
                # of _ready (else a later add() would queue it there twice, and two workers
                # could run one key at once); an emptied running key stays until it finishes
                for key in emptied.intersection(self._ready):
                    del self._queues[key]
                ready = [k for k in self._ready if k not in emptied]
                self._ready.clear()
                self._ready.extend(ready)
            self.pending -= len(dropped)
        return dropped

    def wait(
        self, until: Callable[[], bool], timeout_s: float | None, what: str = "records"
    ) -> bool:
        """Wait (reporting every 10 s) until ``until()`` holds under the lock; False: timed out."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        report = time.monotonic() + _REPORT_EVERY_S
        with self._lock:
            while not until():
                now = time.monotonic()
                if deadline is not None and now >= deadline:
                    return False
                if now >= report:
                    _log.warning(
                        "waiting for %s: %d running, %d waiting", what, self.running, self.pending
                    )
                    report = now + _REPORT_EVERY_S
                limit = report - now if deadline is None else min(report, deadline) - now
                self._change.wait(max(limit, 0.0))
        return True

    def running_in(self, partitions: set[TP]) -> int:
        """Records of ``partitions`` in a handler now (call under :meth:`wait`'s lock)."""
        return sum(self._running.get(tp, 0) for tp in partitions)

    def start(
        self,
        workers: int,
        call: Callable[[KafkaMessage], object],
        stop: Callable[[], None],
        name: str,
    ) -> None:
        """Start ``workers`` threads running :meth:`work` (daemons, named ``name-i``)."""
        self._worker_args, self._name = (call, stop), name
        for _ in range(workers):
            self._start_worker()

    def _start_worker(self) -> None:
        assert self._worker_args is not None  # start() came first
        thread = threading.Thread(
            target=self.work,
            args=self._worker_args,
            name=f"{self._name}-{len(self._threads)}",
            daemon=True,
        )
        self._threads.append(thread)
        thread.start()

    def shutdown(self) -> None:
        """Start nothing more, wait for the records running, end and join the workers.

        Threads abandoned by :meth:`expire` are not waited for: they may never return.
        """
        self.halt()
        self.wait(lambda: self.running == 0, None, "handlers to finish")
        self.close()
        for thread in self._threads:
            if thread not in self._abandoned_threads:
                thread.join()

    def expire(self, timeout_s: float) -> list[KafkaMessage]:
        """Give up the records in a handler for ``timeout_s`` or longer; return them.

        Their threads are abandoned (a thread cannot be interrupted): what the handler
        returns or raises later is ignored and the thread ends; a new worker takes each one's
        place (after :meth:`start`). Each record's key is released at once, so the key's next
        record may start while the abandoned call still runs.
        """
        now = time.monotonic()
        expired: list[KafkaMessage] = []
        with self._lock:
            for slot, (message, key, since, thread) in list(self._slots.items()):
                if now - since < timeout_s:
                    continue
                del self._slots[slot]
                self._abandoned.add(slot)
                self._abandoned_threads.add(thread)
                self.running -= 1
                self._running[(message.topic(), message.partition())] -= 1
                self._release_key(key)
                expired.append(message)
            if expired:
                self._change.notify_all()
        if self._worker_args is not None:
            for _ in expired:
                self._start_worker()
        return expired

    def add_unfinished(self, message: KafkaMessage) -> None:
        """A record given up by :meth:`expire` was not done either (the run stops)."""
        with self._lock:
            self.unfinished.append(message)

    def _release_key(self, key: Hashable) -> None:
        """A record of ``key`` is done (under the lock): its next one may start."""
        rest = self._queues.get(key)
        if rest:
            self._ready.append(key)
            self._work.notify()
        elif rest is not None:
            del self._queues[key]

    def close(self) -> None:
        """Let the workers end (after the record each one has in hand)."""
        with self._lock:
            self._closed = True
            self._work.notify_all()

    # ------------------------------------------------------------------ workers
    def work(self, call: Callable[[KafkaMessage], object], stop: Callable[[], None]) -> None:
        """A worker: run ready records until closed; the first error halts everything.

        ``call(message)`` handles one record; what it returns is kept for
        :meth:`take_finished`. An exception it raises is kept in :attr:`error` for the run's
        thread, the record's key stays blocked, and ``stop()`` ends the polling.
        """
        lock, queues, ready = self._lock, self._queues, self._ready
        while True:
            with lock:
                while self._halted or not ready:
                    if self._closed:
                        return
                    self._work.wait()
                key = ready.popleft()
                queue = queues[key]  # a ready key has records waiting (drop() keeps it so)
                message = queue.popleft()
                tp = (message.topic(), message.partition())
                self.pending -= 1
                self.running += 1
                self._running[tp] = self._running.get(tp, 0) + 1
                slot = self._next_slot = self._next_slot + 1
                self._slots[slot] = (message, key, time.monotonic(), threading.current_thread())
            error: BaseException | None = None
            result: object = None
            try:
                result = call(message)
            except BaseException as exc:  # kept for the run's thread, which re-raises it
                error = exc
            with lock:
                if slot in self._abandoned:  # given up by expire(): nothing of it counts
                    self._abandoned.discard(slot)
                    return  # a new worker took this one's place
                del self._slots[slot]
                self.running -= 1
                self._running[tp] -= 1
                if error is not None:
                    self.unfinished.append(message)
                    if self.error is None:
                        self.error, self.failed = error, message
                    self._halted = True  # the key stays blocked: its record is not done
                else:
                    self._finished.append((message, result))
                    self._release_key(key)
                self._change.notify_all()
            if error is not None:
                stop()
