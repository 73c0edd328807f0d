"""The per-partition task with fake clients: stop on position across gaps, skip committed work
after init_transactions, chunked transactions, and each recovery path."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from sdk.errors import HandlerError, ProducerFencedError
from sdk.processor import OutputRecord
from spark_integration import BatchJobConfig, PartitionRange, run_range


@dataclass
class Msg:
    _offset: int
    _error: Any = None
    _partition: int = 0

    def error(self) -> Any:
        return self._error

    def offset(self) -> int:
        return self._offset

    def partition(self) -> int:
        return self._partition

    def topic(self) -> str:
        return "in"

    def value(self) -> bytes:
        return str(self._offset).encode()

    def key(self) -> None:
        return None

    def headers(self) -> None:
        return None


class Eof:
    def __init__(self, offset: int) -> None:
        self._offset = offset

    def error(self) -> KafkaError:
        return KafkaError(KafkaError._PARTITION_EOF)

    def offset(self) -> int:
        return self._offset


@dataclass
class World:
    """The 'broker': input offsets (gaps = markers/aborted), group offset, output log."""

    offsets: list[int]
    end: int
    committed: int = -1
    output: list[bytes] = field(default_factory=list)
    init_calls: int = 0
    commit_failures: list[KafkaError] = field(default_factory=list)
    producers: int = 0


class FakeProducer:
    def __init__(self, world: World) -> None:
        self.w = world
        self.pending: list[bytes] = []
        self.offset: int | None = None
        world.producers += 1

    def init_transactions(self, timeout: float) -> None:
        self.w.init_calls += 1

    def begin_transaction(self) -> None:
        self.pending, self.offset = [], None

    def produce(self, topic: str, value: Any = None, key: Any = None, **kw: Any) -> None:
        self.pending.append(value)

    def poll(self, timeout: float) -> int:
        return 0

    def flush(self, timeout: float) -> int:
        return 0

    def send_offsets_to_transaction(self, offsets: list[Any], md: Any, timeout: float) -> None:
        self.offset = offsets[0].offset

    def commit_transaction(self, timeout: float) -> None:
        if self.w.commit_failures:
            raise KafkaException(self.w.commit_failures.pop(0))
        self.w.output += self.pending
        if self.offset is not None:
            self.w.committed = self.offset
        self.pending = []

    def abort_transaction(self, timeout: float) -> None:
        self.pending = []

    def purge(self) -> None:
        self.pending = []


class FakeConsumer:
    def __init__(self, world: World) -> None:
        self.w = world
        self.queue: list[Any] = []

    def committed(self, tps: list[Any], timeout: float) -> list[Any]:
        from confluent_kafka import TopicPartition

        return [TopicPartition(tp.topic, tp.partition, self.w.committed) for tp in tps]

    def assign(self, tps: list[Any]) -> None:
        start = tps[0].offset
        self.queue = [Msg(o) for o in self.w.offsets if o >= start] + [Eof(self.w.end)]

    def consume(self, n: int, timeout: float) -> list[Any]:
        out, self.queue = self.queue[:n], self.queue[n:]
        return out

    def position(self, tps: list[Any]) -> list[Any]:
        from confluent_kafka import TopicPartition

        return [TopicPartition("in", 0, -1001)]

    def consumer_group_metadata(self) -> object:
        return object()

    def close(self) -> None:
        pass


def _config(**job: Any) -> BatchJobConfig:
    return BatchJobConfig.exactly_once(
        job_name="j",
        input_topics=["in"],
        bootstrap_servers="127.0.0.1:1",
        group_id="g",
        consumer={"batch_size": 10, "failure": {"attempts": 1}},
        **job,
    )


def _copy(records: Iterator[Any]) -> list[OutputRecord]:
    return [OutputRecord("out", m.value()) for m in records]


def _run(world: World, config: BatchJobConfig | None = None, transform: Any = _copy) -> Any:
    rng = PartitionRange("in", 0, 0, world.end, "tid")
    return run_range(
        rng,
        config or _config(max_records_per_transaction=25),
        transform,
        producer_factory=lambda c: FakeProducer(world),
        consumer_factory=lambda c: FakeConsumer(world),
    )


# offsets 0..99 with gaps: a marker every 10 offsets and an aborted run 40-44; end after a marker
GAPPY = [o for o in range(100) if o % 10 != 9 and not 40 <= o < 45]


def test_stops_on_position_across_marker_gaps_and_commits_the_end() -> None:
    world = World(offsets=GAPPY, end=100)
    result = _run(world)
    assert [int(v) for v in world.output] == GAPPY
    assert world.committed == 100  # the end, past the final marker at 99
    assert result.records_in == len(GAPPY) and result.transactions == 4  # 25 records each


def test_init_transactions_comes_first_then_committed_work_is_skipped() -> None:
    world = World(offsets=GAPPY, end=100, committed=50)
    result = _run(world)
    assert world.init_calls == 1
    assert result.start == 50 and result.planned_start == 0
    assert [int(v) for v in world.output] == [o for o in GAPPY if o >= 50]


def test_nothing_to_do_after_a_finished_run() -> None:
    world = World(offsets=GAPPY, end=100, committed=100)
    result = _run(world)
    assert world.output == [] and result.transactions == 0


def test_ambiguous_commit_recreates_the_producer_and_rewinds() -> None:
    world = World(offsets=GAPPY, end=100)
    world.commit_failures = [KafkaError(KafkaError._TIMED_OUT, "commit timed out")]
    result = _run(world)
    assert world.producers == 2 and result.producer_recreations == 1
    assert [int(v) for v in world.output] == GAPPY  # the failed chunk was redone, once


def test_abortable_commit_aborts_and_rewinds() -> None:
    world = World(offsets=GAPPY, end=100)
    world.commit_failures = [KafkaError(KafkaError.INVALID_TXN_STATE, "x", txn_requires_abort=True)]
    result = _run(world)
    assert result.aborts == 1 and world.producers == 1
    assert [int(v) for v in world.output] == GAPPY


def test_fenced_commit_raises() -> None:
    world = World(offsets=GAPPY, end=100)
    world.commit_failures = [KafkaError(KafkaError._FENCED, "fenced", fatal=True)]
    with pytest.raises(ProducerFencedError):
        _run(world)
    assert world.output == []


def test_transform_failure_aborts_and_raises_for_spark_to_retry() -> None:
    world = World(offsets=GAPPY, end=100)

    def boom(records: Iterator[Any]) -> list[OutputRecord]:
        out = _copy(records)
        if any(int(o.value or b"0") >= 60 for o in out):  # type: ignore[arg-type]
            raise ValueError("bad record")
        return out

    with pytest.raises(HandlerError):
        _run(world, transform=boom)
    assert all(int(v) < 60 for v in world.output) and world.committed <= 60


def test_long_transactions_commit_early() -> None:
    world = World(offsets=list(range(100)), end=100)
    config = _config(max_records_per_transaction=100, max_transaction_ms=100)
    import time

    def slow(records: Iterator[Any]) -> list[OutputRecord]:
        time.sleep(0.06)
        return _copy(records)

    result = _run(world, config, slow)
    assert result.transactions > 1  # 10 transform calls of 60 ms, limit 100 ms
    assert [int(v) for v in world.output] == list(range(100))


def test_columnar_batch_transform_runs_once_per_chunk() -> None:
    from spark_integration import batch_transform

    calls: list[int] = []

    def double(batch: dict[str, list[Any]]) -> dict[str, list[Any]]:
        calls.append(len(batch["value"]))
        assert set(batch) == {"topic", "partition", "offset", "timestamp", "key", "value"}
        return {"value": [v + b"!" for v in batch["value"]], "key": batch["key"]}

    world = World(offsets=GAPPY, end=100)
    _run(world, transform=batch_transform(double, batch_format="columns", output_topic="out"))
    assert [int(v[:-1]) for v in world.output] == GAPPY
    assert calls and max(calls) == 10  # consumer batch_size rows per call


def test_columnar_format_is_checked() -> None:
    from sdk.errors import ConfigurationError
    from spark_integration import batch_transform

    with pytest.raises(ConfigurationError) as info:
        batch_transform(lambda t: t, batch_format="polars")
    assert "arrow, columns, pandas" in str(info.value)
