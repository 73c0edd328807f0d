"""Pure logic: config validation, transactional ids, explain/progress text, Spark conf checks,
native-source options, connector version candidates."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sdk.errors import ConfigurationError
from sdk.profiles import ProducerProfile
from sdk.testing.spark_jars import connector_candidates
from spark_integration import (
    BatchJobConfig,
    PartitionRange,
    StreamingSinkConfig,
    check_spark_conf,
    explain_ranges,
    format_progress,
    offsets_json,
    range_transactional_id,
)


def _config(**kw: Any) -> BatchJobConfig:
    return BatchJobConfig.exactly_once(
        job_name=kw.pop("job_name", "job"),
        input_topics=["in"],
        bootstrap_servers="127.0.0.1:1",
        group_id="g",
        **kw,
    )


def test_defaults() -> None:
    c = _config()
    assert c.group_id == "g" and c.prefix == "spark-"
    assert c.transaction_ms == 15_000  # a quarter of the 60 s transaction timeout


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"job_name": "a b"}, "job_name"),
        ({"max_transaction_ms": 60_000}, "max_transaction_ms"),
        ({"producer": {"transaction_timeout_ms": 5_000}, "max_transaction_ms": 9_000}, None),
    ],
)
def test_invalid_configs_name_the_field(kw: dict[str, Any], field: str | None) -> None:
    with pytest.raises(ConfigurationError) as info:
        _config(**kw)
    if field is not None:
        assert info.value.field == field


def test_only_exactly_once_with_a_prefix() -> None:
    base = {
        "job_name": "j",
        "input_topics": ["in"],
        "processing": {
            "guarantee": "at_least_once",
            "consumer": {"guarantee": "at_least_once", "bootstrap_servers": "b", "group_id": "g"},
            "producer": {"guarantee": "at_least_once", "bootstrap_servers": "b"},
        },
    }
    with pytest.raises(ConfigurationError) as info:
        BatchJobConfig.model_validate(base)
    assert info.value.field == "processing.guarantee"
    eos = json.loads(json.dumps(base).replace("at_least_once", "exactly_once"))
    eos["processing"]["producer"]["transactional_id"] = "one-id"
    with pytest.raises(ConfigurationError) as info:
        BatchJobConfig.model_validate(eos)
    assert info.value.field == "processing.producer.transactional_id_prefix"


def test_transactional_id_is_per_input_partition_and_stable() -> None:
    a = range_transactional_id("p-", "job", "g", "in", 3)
    assert a == "p-job.g.in.3" == range_transactional_id("p-", "job", "g", "in", 3)
    assert a != range_transactional_id("p-", "job", "g", "in", 2)


RANGES = [
    PartitionRange("in", 0, 10, 110, "t0"),
    PartitionRange("in", 1, 50, 50, "t1"),
]


def test_explain_lists_every_partition() -> None:
    text = explain_ranges(RANGES, job="job", group="g")
    assert "2 Spark tasks" in text
    assert "in[0]  offsets [10, 110)  100 offsets" in text
    assert "in[1]  offsets [50, 50)  nothing to do" in text
    assert "total: 100 offsets" in text


def test_progress_counts_committed_offsets_against_ranges() -> None:
    line = format_progress(RANGES, {("in", 0): 60, ("in", 1): -1})
    assert line.startswith("progress: 50/100 offsets committed (50.0%)")
    assert "in[0] 50/100" in line


def test_offsets_json() -> None:
    assert json.loads(offsets_json(RANGES, "start")) == {"in": {"0": 10, "1": 50}}
    assert json.loads(offsets_json(RANGES, "end")) == {"in": {"0": 110, "1": 50}}
    with pytest.raises(ConfigurationError):
        offsets_json(RANGES, "middle")


class _Conf:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values

    def get(self, key: str, default: str) -> str:
        return self.values.get(key, default)


class _Spark:
    """A session stand-in: settings are read through ``spark.conf`` (Spark Connect has no
    SparkContext), the master as ``spark.master``."""

    def __init__(self, master: str, **conf: str) -> None:
        self.conf = _Conf({"spark.master": master, **conf})


def test_speculation_is_rejected() -> None:
    with pytest.raises(ConfigurationError) as info:
        check_spark_conf(_Spark("local[2,4]", **{"spark.speculation": "true"}))
    assert info.value.field == "spark.speculation"


def test_local_master_without_retries_warns() -> None:
    lines: list[str] = []
    check_spark_conf(_Spark("local[2]"), lines.append)
    assert lines and "never retries" in lines[0]
    lines.clear()
    check_spark_conf(_Spark("local[2,4]"), lines.append)
    assert lines == []


def test_streaming_sink_config() -> None:
    producer = ProducerProfile(
        guarantee="exactly_once", bootstrap_servers="b", transactional_id_prefix="p-"
    )
    c = StreamingSinkConfig(sink_name="s", producer=producer, progress_topic="prog")
    assert c.group == "s.progress" and c.transactional_id(2) == "p-s.slice-2"
    with pytest.raises(ConfigurationError) as info:
        StreamingSinkConfig(
            sink_name="s",
            producer=ProducerProfile(
                guarantee="exactly_once", bootstrap_servers="b", transactional_id="x"
            ),
            progress_topic="prog",
        )
    assert info.value.field == "producer.transactional_id_prefix"


def test_connector_candidates() -> None:
    assert connector_candidates("4.3.0") == ["4.3.0", "4.2.0", "4.1.0", "4.0.0"]
    assert connector_candidates("3.5.1") == ["3.5.1", "3.4.0", "3.3.0", "3.2.0", "3.1.0", "3.0.0"]
    assert connector_candidates("dev") == ["dev"]


def test_slice_of_is_deterministic_and_spreads_partitions() -> None:
    from spark_integration._slicing import slice_of

    slices = [slice_of(("orders", p), 4) for p in range(8)]
    assert sorted(slices[:4]) == [0, 1, 2, 3]  # one topic's partitions go round-robin
    assert slices == [slice_of(("orders", p), 4) for p in range(8)]
    assert slice_of(("orders", 1), 4) == (slice_of(("orders", 0), 4) + 1) % 4
