"""Support for the concurrent-run tests: a handler that watches itself.

Records are seeded with :func:`tests.sdk.processor._support.seed` (key ``k<i % keys>``,
value ``str(i)``).
"""

from __future__ import annotations

import random
import threading
import time
from collections import defaultdict
from typing import Any

from sdk.consumer import ConsumerRecord


class Watcher:
    """A handler that records each handling and checks that no ordering group overlaps.

    ``group(record)`` names what must not run at once (the key, the partition, or the record
    itself for ``unordered``). ``sleep_s`` (uniform 0..sleep_s) stands in for I/O.
    """

    def __init__(self, group: str = "key", sleep_s: float = 0.002, seed: int = 1) -> None:
        self.group = group
        self.sleep_s = sleep_s
        self.lock = threading.Lock()
        self.active: dict[Any, int] = defaultdict(int)
        self.overlaps: list[Any] = []
        self.order: dict[Any, list[int]] = defaultdict(list)
        self.handled: list[int] = []
        self.now = 0
        self.peak = 0
        self.rng = random.Random(seed)
        self.hook: Any = None  # called with each record before it sleeps

    def _group(self, record: ConsumerRecord) -> Any:
        if self.group == "key":
            return (record.partition, record.key)
        if self.group == "partition":
            return record.partition
        return (record.partition, record.offset)

    def __call__(self, record: ConsumerRecord) -> None:
        g = self._group(record)
        with self.lock:
            self.active[g] += 1
            if self.active[g] > 1:
                self.overlaps.append(g)
            self.now += 1
            self.peak = max(self.peak, self.now)
            self.order[g].append(record.offset)
            delay = self.rng.random() * self.sleep_s
        try:
            if self.hook is not None:
                self.hook(record)
            time.sleep(delay)
        finally:
            with self.lock:
                self.active[g] -= 1
                self.now -= 1
        with self.lock:
            self.handled.append(int(record.value))

    def out_of_order(self) -> list[Any]:
        """Groups whose records were started out of offset order."""
        return [g for g, offsets in self.order.items() if offsets != sorted(offsets)]
