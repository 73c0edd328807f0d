"""Transforms with deterministic fault rules, for the Spark tests (pickled to executors)."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from sdk.processor import OutputRecord


class InjectedFailure(RuntimeError):
    """The deterministic task failure of the tests."""


_seen: dict[tuple[int, int, int], int] = defaultdict(int)


def _ctx() -> tuple[int, int, int]:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        return (-1, -1, -1)
    return (ctx.stageId(), ctx.partitionId(), ctx.attemptNumber())


class FaultRules:
    """Fail attempt 0 of the tasks of ``fail_partitions`` after ``fail_after`` records of that
    attempt; optionally block (any attempt) once a record at offset >= ``block_at`` is seen
    (and more than ``block_after`` records by the attempt, in ``block_partitions`` if given),
    after touching ``<block_dir>/blocked-<partition>`` (the test then SIGKILLs the driver)."""

    def __init__(
        self,
        fail_partitions: Iterable[int] = (),
        fail_after: int = 0,
        block_at: int | None = None,
        block_dir: str | None = None,
        block_partitions: Iterable[int] | None = None,
        block_after: int = 0,
    ) -> None:
        self.fail_partitions = frozenset(fail_partitions)
        self.fail_after = fail_after
        self.block_at = block_at
        self.block_dir = block_dir
        self.block_after = block_after
        self.block_partitions = None if block_partitions is None else frozenset(block_partitions)

    def check(self, partition: int, offset: int) -> None:
        key = _ctx()
        _seen[key] += 1
        if key[2] == 0 and partition in self.fail_partitions and _seen[key] > self.fail_after:
            raise InjectedFailure(f"injected: partition {partition} attempt 0 at offset {offset}")
        blocks = self.block_partitions is None or partition in self.block_partitions
        blocks = blocks and _seen[key] > self.block_after
        if self.block_at is not None and offset >= self.block_at and self.block_dir and blocks:
            Path(self.block_dir, f"blocked-{partition}").touch()
            time.sleep(3600)


class CopyRecords:
    """Record transform (batch job): copy value and key to ``topic``, under the fault rules."""

    def __init__(self, topic: str, rules: FaultRules | None = None) -> None:
        self.topic = topic
        self.rules = rules or FaultRules()

    def __call__(self, records: Iterator[Any]) -> list[OutputRecord]:
        out = []
        for r in records:
            self.rules.check(r.partition, r.offset)
            out.append(OutputRecord(self.topic, r.value, key=r.key))
        return out


class CopyRows:
    """Row transform (streaming sink): copy the Kafka source's key and value to ``topic``."""

    def __init__(self, topic: str, rules: FaultRules | None = None) -> None:
        self.topic = topic
        self.rules = rules or FaultRules()

    def __call__(self, rows: Iterator[Any]) -> list[OutputRecord]:
        out = []
        for r in rows:
            self.rules.check(r.partition, r.offset)
            out.append(OutputRecord(self.topic, r.value, key=r.key))
        return out


class NativeRows:
    """mapPartitions function for Spark's native sink: (key, value) rows, same fault rules."""

    def __init__(self, rules: FaultRules) -> None:
        self.rules = rules

    def __call__(self, rows: Iterator[Any]) -> Iterator[tuple[bytes, bytes]]:
        for r in rows:
            self.rules.check(r.partition, r.offset)
            yield (r.key, r.value)
