"""The streaming sink's slice writer on a real broker, without Spark: a replayed slice is
skipped, a failed slice leaves neither output nor marker, a changed slice count is refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sdk.errors import ConfigurationError
from sdk.processor import OutputRecord
from sdk.profiles import ProducerProfile
from spark_integration import ExactlyOnceStreamingSink, StreamingSinkConfig
from spark_integration._streaming import write_slice
from tests.spark_integration._support import committed, read_values, verdict

pytestmark = [pytest.mark.broker]


class Row:
    def __init__(self, i: int) -> None:
        self.value = str(i).encode()
        self.key = None


def _copy(topic: str, fail_at: int | None = None) -> Any:
    def transform(rows: Iterator[Row]) -> list[OutputRecord]:
        out = []
        for r in rows:
            if fail_at is not None and int(r.value) == fail_at:
                raise RuntimeError("transform failed")
            out.append(OutputRecord(topic, r.value))
        return out

    return transform


def test_replayed_slice_is_skipped_and_failed_slice_leaves_nothing(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    dst, progress, name = make_topic(1), make_topic(2), make_group("sink")
    config = StreamingSinkConfig(
        sink_name=name,
        producer=ProducerProfile(
            guarantee="exactly_once", bootstrap_servers=bs, transactional_id_prefix=f"{name}-"
        ),
        progress_topic=progress,
        chunk_size=100,
    )
    rows = [Row(i) for i in range(1_000)]
    first = write_slice(config, _copy(dst), 0, 0, 2, iter(rows))
    assert not first.skipped and first.records_out == 1_000
    again = write_slice(config, _copy(dst), 0, 0, 2, iter(rows))  # replay of batch 0, slice 0
    assert again.skipped
    assert committed(bs, config.group, progress, 2) == [1, -1]

    more = [Row(i) for i in range(1_000, 1_500)]
    with pytest.raises(RuntimeError):  # fails after 300 rows were produced in the transaction
        write_slice(config, _copy(dst, fail_at=1_300), 1, 0, 2, iter(more))
    assert committed(bs, config.group, progress, 2) == [1, -1]  # marker not advanced
    done = write_slice(config, _copy(dst), 1, 0, 2, iter(more))  # Spark's task retry
    assert not done.skipped and committed(bs, config.group, progress, 2) == [2, -1]

    v = verdict(read_values(bs, dst), 1_500)
    assert (v.count, v.duplicates, v.missing) == (1_500, 0, 0)

    # the marker remembers the slice count: a replay of batch 1 with 3 slices is refused
    sink = ExactlyOnceStreamingSink(config)
    sink._check_replay(1, 2)
    with pytest.raises(ConfigurationError) as info:
        sink._check_replay(1, 3)
    assert "not deterministic" in str(info.value)
