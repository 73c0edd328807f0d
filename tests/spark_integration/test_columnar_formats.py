"""The pandas and Arrow variants of the columnar batch transform (no Spark, no broker)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa

from sdk import ConsumerRecord
from sdk.processor import OutputRecord
from spark_integration import batch_transform


class _Msg:
    def __init__(self, offset: int) -> None:
        self._offset = offset

    def topic(self) -> str:
        return "in"

    def partition(self) -> int:
        return 2

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return (1, 1_700_000_000_000 + self._offset)

    def key(self) -> bytes:
        return b"k%d" % self._offset

    def value(self) -> bytes:
        return b"%d" % self._offset


def _record(offset: int) -> ConsumerRecord:
    """A transform's input: the ConsumerRecord over a message, as a Spark task hands it over."""
    m = _Msg(offset)
    return ConsumerRecord(m.key(), m.value(), m)


def test_pandas_batch_transform() -> None:
    seen: list[Any] = []

    def double(frame: Any) -> Any:
        seen.append(frame)
        out = frame[frame["offset"] % 2 == 0][["key", "value"]].copy()
        out["value"] = out["value"].map(lambda v: v * 2)
        return out

    result = batch_transform(double, batch_format="pandas", output_topic="out")(
        iter([_record(i) for i in range(6)])
    )
    assert isinstance(seen[0], pd.DataFrame) and len(seen[0]) == 6
    assert list(seen[0].columns) == ["topic", "partition", "offset", "timestamp", "key", "value"]
    assert result == [
        OutputRecord("out", b"00", key=b"k0"),
        OutputRecord("out", b"22", key=b"k2"),
        OutputRecord("out", b"44", key=b"k4"),
    ]


def test_arrow_batch_transform_with_topic_column() -> None:
    def route(table: Any) -> Any:
        assert isinstance(table, pa.Table) and table.num_rows == 3
        return pa.table(
            {
                "topic": ["a", "b", "a"],
                "key": table.column("key").to_pylist(),
                "value": table.column("value").to_pylist(),
            }
        )

    result = batch_transform(route, batch_format="arrow")(iter([_record(i) for i in range(3)]))
    assert [(r.topic, r.value) for r in result] == [("a", b"0"), ("b", b"1"), ("a", b"2")]
