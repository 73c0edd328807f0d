"""A deadline that a thread of its own marks as passed: the Processor's per-record clock.

The Processor's per-record loop stops after the record during which its commit became due.
Reading ``time.monotonic()`` after every record to find out was the largest single step the
loop added to a record (measured without a broker: 65-95 ns of the 490-590 ns the loop
takes, against the hand-written loop's 225). Here a thread waits until :attr:`Deadline.at`
and then sets :attr:`Deadline.passed`; the loop reads that attribute instead (about 10 ns).

The flag is set from Python, so the thread needs the interpreter's lock to set it: it rises
at ``at`` or up to one switch interval after it (``sys.getswitchinterval()``, 5 ms by default)
while the loop's thread runs Python code. A loop still stops after the record during which the
deadline passed, as it did with the clock read, however slow that record's handler is.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Protocol

__all__ = ["Deadline", "Due"]


class Due(Protocol):
    """When the Processor's per-record loops stop: after the record during which it passed.

    They read ``passed`` once after each record (a :class:`Deadline`; tests pass their own).
    """

    @property
    def at(self) -> float:
        """When ``passed`` turns True (``time.monotonic()`` seconds)."""
        ...

    @property
    def passed(self) -> bool:
        """Whether ``at`` passed."""
        ...


class Deadline:
    """``passed`` turns True at ``at`` (``time.monotonic()`` seconds); :meth:`set` moves it.

    The thread starts at the first :meth:`set` and ends at :meth:`close`, for good: a
    :meth:`set` after it moves ``at`` and marks a time already past, but starts no thread (a
    Processor closed from another thread while its loop still runs leaves none behind). It is
    a daemon: a deadline nobody closed never keeps the interpreter from exiting.
    """

    __slots__ = ("_closed", "_cond", "_thread", "at", "passed")

    def __init__(self) -> None:
        self.at = math.inf
        """When ``passed`` turns True (``time.monotonic()`` seconds; inf: never)."""
        self.passed = False
        """Whether ``at`` passed (set by the thread, or by :meth:`set` for a past ``at``)."""
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def set(self, at: float) -> None:
        """Let ``passed`` turn True at ``at``: at once if that time passed already.

        The same ``at`` again costs a comparison (the loop sets it before every run of
        records; it changes only when a commit moved it).
        """
        if at == self.at:
            return
        with self._cond:
            self.at = at
            self.passed = time.monotonic() >= at
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._watch, name="sdk-deadline", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def close(self) -> None:
        """End the thread for good (idempotent); ``passed`` stays as it is."""
        with self._cond:
            thread, self._thread = self._thread, None
            self._closed = True
            self._cond.notify()
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def _watch(self) -> None:
        cond = self._cond
        with cond:
            while not self._closed:
                left = self.at - time.monotonic()
                if left <= 0:
                    self.passed = True
                    cond.wait()  # until set() moves it, or close()
                else:
                    cond.wait(min(left, 3600.0))  # inf, or past threading.TIMEOUT_MAX
