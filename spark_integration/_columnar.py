"""A batch (columnar) variant of the record transform: pandas, Arrow or plain columns.

:func:`batch_transform` wraps ``fn(batch) -> table`` into a
:class:`~spark_integration.RecordTransform`: each chunk of input records becomes one table with
the columns ``topic, partition, offset, timestamp, key, value`` (bytes), and each row of the
returned table becomes one output record (columns ``value``, optional ``key`` and ``topic``).
pandas and pyarrow are imported only when their format is used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Literal

from sdk.errors import ConfigurationError
from sdk.processor import OutputRecord
from sdk.records import ConsumerRecord

__all__ = ["BatchFormat", "ColumnarTransform", "batch_transform", "records_to_columns"]

BatchFormat = Literal["columns", "pandas", "arrow"]
_FORMATS = ("arrow", "columns", "pandas")
_COLUMNS = ("topic", "partition", "offset", "timestamp", "key", "value")


def records_to_columns(records: Iterable[ConsumerRecord]) -> dict[str, list[Any]]:
    """Turn :class:`sdk.ConsumerRecord` s into a dict of equal-length column lists.

    ``timestamp`` is in ms since the epoch, -1 where the broker has none.
    """
    columns: dict[str, list[Any]] = {name: [] for name in _COLUMNS}
    for r in records:
        columns["topic"].append(r.topic)
        columns["partition"].append(r.partition)
        columns["offset"].append(r.offset)
        ts = r.timestamp_ms
        columns["timestamp"].append(-1 if ts is None else ts)
        columns["key"].append(r.key)
        columns["value"].append(r.value)
    return columns


def _rows(result: Any) -> Iterator[Mapping[str, Any]]:
    if result is None:
        return iter(())
    if hasattr(result, "to_pylist"):  # pyarrow.Table / RecordBatch
        return iter(result.to_pylist())
    if hasattr(result, "to_dict") and hasattr(result, "columns"):  # pandas.DataFrame
        return iter(result.to_dict("records"))
    if isinstance(result, Mapping):  # plain columns
        names = list(result)
        return (dict(zip(names, row, strict=True)) for row in zip(*result.values(), strict=True))
    return iter(result)


class ColumnarTransform:
    """A RecordTransform that calls ``fn`` once per chunk with a table (see module doc).

    Args:
        fn: ``table -> table`` (or an iterable of OutputRecord).
        batch_format: ``"pandas"``, ``"arrow"`` or ``"columns"`` (dict of lists, no deps).
        output_topic: Topic of output rows without a ``topic`` column.

    Raises:
        ConfigurationError: Unknown format (the message lists the valid ones).
    """

    def __init__(
        self,
        fn: Callable[[Any], Any],
        *,
        batch_format: str = "pandas",
        output_topic: str | None = None,
    ) -> None:
        if batch_format not in _FORMATS:
            raise ConfigurationError(
                f"batch_format: unknown format {batch_format!r}; valid: {', '.join(_FORMATS)}",
                field="batch_format",
            )
        self.fn = fn
        self.batch_format = batch_format
        self.output_topic = output_topic

    def _table(self, columns: dict[str, list[Any]]) -> Any:
        if self.batch_format == "pandas":
            return importlib.import_module("pandas").DataFrame(columns)
        if self.batch_format == "arrow":
            return importlib.import_module("pyarrow").table(columns)
        return columns

    def __call__(self, records: Iterator[ConsumerRecord]) -> list[OutputRecord]:
        """Run ``fn`` on the chunk as one table; return its rows as output records.

        Raises:
            ConfigurationError: A row has no topic and no ``output_topic`` was given.
        """
        result = self.fn(self._table(records_to_columns(records)))
        out: list[OutputRecord] = []
        for row in _rows(result):
            if isinstance(row, OutputRecord):
                out.append(row)
                continue
            topic = row.get("topic") or self.output_topic
            if topic is None:
                raise ConfigurationError(
                    "output_topic: an output row has no 'topic' column and no output_topic "
                    "was given",
                    field="output_topic",
                )
            out.append(OutputRecord(str(topic), row["value"], key=row.get("key")))
        return out


def batch_transform(
    fn: Callable[[Any], Any], *, batch_format: str = "pandas", output_topic: str | None = None
) -> ColumnarTransform:
    """Wrap a table function as a RecordTransform (see :class:`ColumnarTransform`).

    Raises:
        ConfigurationError: Unknown format.
    """
    return ColumnarTransform(fn, batch_format=batch_format, output_topic=output_topic)
