"""The queue consumer's counters."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

__all__ = ["Outstanding", "QueueStats"]

_log = logging.getLogger("sdk.queue")


@dataclass
class QueueStats:
    """What the queue consumer did; each acknowledgement outcome has its own counter.

    Attributes:
        polled: Records acquired from the share group.
        handled: Records whose handler succeeded.
        accepted: Records acknowledged ACCEPT (at_most_once: before handling).
        released: Records acknowledged RELEASE (delivered again, maybe to another member).
        rejected: Records acknowledged REJECT (never delivered again; dead-lettered first
            when the profile has a dead-letter topic).
        redelivered: Records acquired with a delivery count above 1.
        retries: Failed attempts followed by another (a RELEASE at_least_once, an in-process
            retry at_most_once).
        handler_failures: Records on which the failure policy gave up.
        deserialization_failures: Records whose key or value could not be deserialized.
        registry_retries: Decodings of a record retried because the schema registry did not
            answer (never counted as failures).
        dead_lettered: Records written to the dead-letter topic (and acknowledged there).
        dead_letter_failures: Dead-letter writes that failed (the record was released, not
            rejected).
        ack_refused: at_most_once: records whose pre-handling acknowledgement the broker
            refused; they were not handled (another member may get them).
        ack_failures: Acknowledgements the broker refused after handling (lock expired: the
            record is delivered again, a duplicate at_least_once).
        slow_handlers: Records acknowledged after their poll's record lock (measured from the
            poll: a poll's records are acquired together).
        lock_budget_releases: at_least_once: records released unhandled because most of the
            record lock had passed since their poll (handling them would risk a duplicate).
        abandoned: at_most_once: accepted records never handled (the run stopped mid-batch).
        unacknowledged: ``records()``, at_least_once: records not acknowledged before the
            next poll began (or the iteration ended); released, so delivered again.
        events: The last event lines.
    """

    polled: int = 0
    handled: int = 0
    accepted: int = 0
    released: int = 0
    rejected: int = 0
    redelivered: int = 0
    retries: int = 0
    handler_failures: int = 0
    deserialization_failures: int = 0
    registry_retries: int = 0
    dead_lettered: int = 0
    dead_letter_failures: int = 0
    ack_refused: int = 0
    ack_failures: int = 0
    slow_handlers: int = 0
    lock_budget_releases: int = 0
    abandoned: int = 0
    unacknowledged: int = 0
    events: list[str] = field(default_factory=list)

    def note(self, event: str, level: int = logging.INFO) -> None:
        """Append a short event line (kept to the last 1000) and log it (``sdk.queue``)."""
        _log.log(level, "%s", event, extra={"queue_event": event})
        self.events.append(event)
        if len(self.events) > 1000:
            del self.events[:100]


class Outstanding:
    """Which records of one poll are not acknowledged yet, by index.

    Every index from a start (raised by :meth:`taken_before`) on, except those taken one by
    one (:meth:`take`). A per-index dict built for every poll would cost work per record in
    the common case, where the hot loop acknowledges a prefix of the poll and says so once.
    """

    __slots__ = ("_n", "_start", "_taken")

    def __init__(self, n: int) -> None:
        self._n, self._start, self._taken = n, 0, set[int]()

    def take(self, i: int) -> bool:
        """Mark ``i`` acknowledged; False if it already was (the broker takes one)."""
        if i < self._start or i in self._taken:
            return False
        self._taken.add(i)
        return True

    def taken_before(self, i: int) -> None:
        """Every index below ``i`` is acknowledged."""
        self._start = max(self._start, i)

    def clear(self) -> None:
        """Every index is acknowledged."""
        self.taken_before(self._n)

    def rest(self) -> list[int]:
        """The indices not acknowledged, ascending."""
        return [i for i in range(self._start, self._n) if i not in self._taken]
