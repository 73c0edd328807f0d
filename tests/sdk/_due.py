"""A test's :class:`sdk._deadline.Due`: ``passed`` reads the test's clock on every read.

The Processor's loops read ``due.passed`` after each record where ``sdk.records.handle_run``
compares ``clock()`` with ``due_at``; with this, a test gives both loops the same clock (one
that counts its reads, or raises) and checks both against the same contract.
"""

from __future__ import annotations

from collections.abc import Callable


class ClockDue:
    """``passed`` is ``clock() >= at``, read anew each time (what the clock raises, raised)."""

    def __init__(self, at: float, clock: Callable[[], float]) -> None:
        self._at = at
        self._clock = clock

    @property
    def at(self) -> float:
        return self._at

    @property
    def passed(self) -> bool:
        return self._clock() >= self._at
