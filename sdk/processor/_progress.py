"""Progress of a Processor for supervisors: its assignment and committed positions, pushed.

A supervisor (a liveness probe, an autoscaler, a dashboard) would otherwise poll the broker for
the group's committed offsets — the reliability pipeline's watchdog does exactly that. The
Processor instead calls ``on_progress(Progress)`` after every rebalance event and every commit,
and keeps the same facts readable as :attr:`Processor.assignment` / :attr:`Processor.committed`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from confluent_kafka import TopicPartition

__all__ = ["Progress", "ProgressTracker"]

_log = logging.getLogger("sdk.processor")

ProgressEvent = Literal["assigned", "revoked", "lost", "committed"]


@dataclass(frozen=True)
class Progress:
    """One progress event of a Processor.

    Attributes:
        event: What happened: ``assigned``, ``revoked``, ``lost`` (rebalance) or
            ``committed`` (a transaction committed, offsets stored or pre-committed).
        assignment: The ``(topic, partition)`` pairs owned after the event, sorted.
        committed: The next offset to read per ``(topic, partition)`` as last committed by
            this processor (exactly_once, at_most_once) or stored for the auto-commit
            (at_least_once); partitions no longer owned are dropped.
        records_in: Input records handled so far.
        at: Wall-clock time of the event (``time.time()``).
    """

    event: ProgressEvent
    assignment: tuple[tuple[str, int], ...]
    committed: Mapping[tuple[str, int], int] = field(repr=False)
    records_in: int
    at: float


class ProgressTracker:
    """Keeps the assignment and committed positions; tells ``hook`` about each change.

    Args:
        hook: Called with each :class:`Progress` (in the processor's thread; keep it short).
            An exception it raises is logged, never raised into the loop.
        records_in: Reads the processor's handled-record count.
    """

    def __init__(
        self, hook: Callable[[Progress], object] | None, records_in: Callable[[], int]
    ) -> None:
        self._hook = hook
        self._records_in = records_in
        self.assignment: set[tuple[str, int]] = set()
        self.committed: dict[tuple[str, int], int] = {}

    def rebalanced(self, event: ProgressEvent, partitions: Iterable[TopicPartition]) -> None:
        """Partitions were assigned, revoked or lost (``TopicPartition`` objects)."""
        keys = {(tp.topic, tp.partition) for tp in partitions}
        if event == "assigned":
            self.assignment |= keys
        else:
            self.assignment -= keys
            for key in keys:
                self.committed.pop(key, None)
        self._emit(event)

    def commit(self, positions: Iterable[tuple[str, int, int]]) -> None:
        """Next offsets ``(topic, partition, offset)`` were committed (or stored)."""
        for topic, partition, offset in positions:
            self.committed[(topic, partition)] = offset
        self._emit("committed")

    def _emit(self, event: ProgressEvent) -> None:
        if self._hook is None:
            return
        progress = Progress(
            event=event,
            assignment=tuple(sorted(self.assignment)),
            committed=MappingProxyType(dict(self.committed)),
            records_in=self._records_in(),
            at=time.time(),
        )
        try:
            self._hook(progress)
        except Exception:  # a supervisor's hook must not stop the loop
            _log.exception("on_progress hook failed (ignored)")
