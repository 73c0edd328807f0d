"""The per-partition task with fake clients: stop on position across gaps, skip committed work
after init_transactions, chunked transactions, and each recovery path."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import KafkaError

from sdk.errors import HandlerError, ProducerFencedError
from sdk.processor import OutputRecord
from sdk.testing.fakes import (
    FakeConsumerClient,
    FakeMessage,
    FakeProducerClient,
    FakeProducerFactory,
)
from spark_integration import BatchJobConfig, PartitionRange, run_range


class World:
    """The 'broker': input offsets (gaps = markers/aborted), group offset, output log.

    Over the shared fakes: the producers commit into ``group_offsets``, which the consumer's
    ``committed()`` reads; ``commit_failures`` are raised once each by ``commit_transaction``.
    """

    def __init__(self, offsets: list[int], end: int, committed: int = -1) -> None:
        self.offsets = offsets
        self.end = end
        self.group_offsets: dict[tuple[str, int], int] = {}
        if committed >= 0:
            self.group_offsets[("in", 0)] = committed
        self.commit_failures: list[KafkaError] = []
        self.factory = FakeProducerFactory(group_offsets=self.group_offsets)

    @property
    def committed(self) -> int:
        return self.group_offsets.get(("in", 0), -1)

    @property
    def output(self) -> list[bytes]:
        return [v for p in self.factory.instances for v in p.committed]

    @property
    def init_calls(self) -> int:
        return sum(p.calls.count("init_transactions") for p in self.factory.instances)

    @property
    def producers(self) -> int:
        return len(self.factory.instances)

    def producer(self, config: dict[str, Any]) -> FakeProducerClient:
        return self.factory(config, failures={"commit_transaction": self.commit_failures})

    def consumer(self, config: dict[str, Any]) -> FakeConsumerClient:
        """in[0]: a record per offset (value = the offset), then end-of-partition at ``end``."""
        messages = [FakeMessage("in", 0, o, str(o).encode()) for o in self.offsets]
        messages.append(FakeMessage.partition_eof("in", 0, self.end))
        return FakeConsumerClient(messages, group_offsets=self.group_offsets, config=config)


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
    return [OutputRecord("out", r.value) for r in records]


def _run(world: World, config: BatchJobConfig | None = None, transform: Any = _copy) -> Any:
    rng = PartitionRange("in", 0, 0, world.end, "tid")
    return run_range(
        rng,
        config or _config(max_records_per_transaction=25),
        transform,
        producer_factory=world.producer,
        consumer_factory=world.consumer,
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


def test_a_transform_gets_consumer_records() -> None:
    from sdk import ConsumerRecord

    seen: list[Any] = []

    def keep(records: Iterator[Any]) -> list[OutputRecord]:
        batch = list(records)
        seen.extend(batch)
        return _copy(iter(batch))

    _run(World(offsets=list(range(10)), end=10), transform=keep)
    assert all(isinstance(r, ConsumerRecord) for r in seen)
    assert [(r.topic, r.partition, r.offset, r.value) for r in seen[:2]] == [
        ("in", 0, 0, b"0"),
        ("in", 0, 1, b"1"),
    ]


def test_the_transform_is_given_to_the_call_that_runs_it() -> None:
    from sdk.errors import ConfigurationError
    from spark_integration import ExactlyOnceBatchJob, ExactlyOnceStreamingSink, StreamingSinkConfig

    with pytest.raises(ConfigurationError) as info:
        ExactlyOnceBatchJob(None, _config()).run()
    assert info.value.field == "transform"
    with pytest.warns(DeprecationWarning, match="run"):
        job = ExactlyOnceBatchJob(None, _config(), _copy)
    with pytest.raises(ConfigurationError):
        job.run(_copy)  # one transform, in one place

    sink_config = StreamingSinkConfig(
        sink_name="s",
        producer={
            "guarantee": "exactly_once",
            "bootstrap_servers": "127.0.0.1:1",
            "transactional_id_prefix": "p-",
        },
        progress_topic="progress",
    )
    sink = ExactlyOnceStreamingSink(sink_config)
    with pytest.raises(ConfigurationError) as info:
        sink(None, 0)  # the old foreachBatch shape needs the transform in the constructor
    assert info.value.field == "transform"
    assert callable(sink.foreach_batch(_copy))
    with pytest.warns(DeprecationWarning, match="foreach_batch"):
        ExactlyOnceStreamingSink(sink_config, _copy)
