"""Progress of a running batch job, read by the driver from the group's committed offsets.

The driver does not need the tasks to report anything while they run: every committed
transaction moves the group's committed offset of its partition (read with require_stable),
so committed offsets against the planned ranges *are* the job's durable progress.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from sdk.errors import KafkaClientError
from sdk.profiles import ConsumerProfile
from spark_integration._ranges import PartitionRange, committed_offsets

__all__ = ["ProgressReporter", "format_progress", "stderr_line"]


def stderr_line(line: str) -> None:
    """Write one progress line to stderr (the default sink)."""
    print(line, file=sys.stderr, flush=True)


def format_progress(ranges: Sequence[PartitionRange], committed: dict[tuple[str, int], int]) -> str:
    """Format one progress report: committed offsets against the planned ranges."""
    total = sum(r.size for r in ranges)
    done = 0
    parts = []
    for r in ranges:
        offset = committed.get((r.topic, r.partition), -1)
        advanced = min(max(0, offset - r.start), r.size)
        done += advanced
        parts.append(f"{r.topic}[{r.partition}] {advanced}/{r.size}")
    pct = 100.0 * done / total if total else 100.0
    return f"progress: {done}/{total} offsets committed ({pct:.1f}%): " + ", ".join(parts)


class ProgressReporter:
    """A daemon thread printing committed progress every ``interval_s`` until stopped.

    Args:
        consumer: The job's consumer profile (group and connection).
        ranges: The planned ranges.
        interval_s: Seconds between reports.
        sink: Receives each line.
        consumer_factory: Makes the consumer that reads the offsets (tests).
    """

    def __init__(
        self,
        consumer: ConsumerProfile,
        ranges: Sequence[PartitionRange],
        interval_s: float,
        sink: Callable[[str], None] = stderr_line,
        consumer_factory: Any = None,
    ) -> None:
        self._consumer = consumer
        self._ranges = list(ranges)
        self._interval = interval_s
        self._sink = sink
        self._consumer_factory = consumer_factory
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="eos-progress", daemon=True)
        self.reports = 0

    def __enter__(self) -> ProgressReporter:
        if self._interval > 0 and self._ranges:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def report(self) -> str:
        """Read the committed offsets now and return the progress line.

        Raises:
            KafkaClientError: The offsets could not be read.
        """
        keys = [(r.topic, r.partition) for r in self._ranges]
        committed = committed_offsets(self._consumer, keys, consumer_factory=self._consumer_factory)
        return format_progress(self._ranges, committed)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            try:
                line = self.report()
            except KafkaClientError as exc:
                line = f"progress: could not read committed offsets ({exc})"
            self.reports += 1
            self._sink(line)
