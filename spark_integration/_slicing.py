"""Slicing a micro-batch with DataFrame APIs only, for the exactly-once streaming sink.

:func:`slice_of` decides a row's slice from its slice-column values; :func:`slice_adder` and
:func:`slice_writer` are the ``mapInArrow`` functions of
:class:`~spark_integration.ExactlyOnceStreamingSink` (no RDD API, so they run under Spark
Connect too).
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from spark_integration._streaming import RowTransform, StreamingSinkConfig

__all__ = ["FILLER", "KEY", "SLICE", "slice_adder", "slice_of", "slice_writer"]


def slice_of(values: tuple[Any, ...], slices: int) -> int:
    """The slice of a row from its slice-column values: deterministic in every process.

    Integers add as themselves, anything else as the CRC-32 of its ``str`` (Python's ``hash``
    of a str differs between processes). With ``("topic", "partition")`` the partitions of one
    topic go round-robin over the slices.
    """
    total = 0
    for value in values:
        if isinstance(value, int) and not isinstance(value, bool):
            total += value
        else:
            total += zlib.crc32(str(value).encode())
    return total % slices


SLICE, FILLER = "__kafka_semantics_slice", "__kafka_semantics_filler"
KEY = "__kafka_semantics_key"


def slice_adder(
    columns: tuple[str, ...], slices: int, keys: list[int]
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """``mapInArrow``: append each row's slice, a False filler flag and the partition key.

    The slice is :func:`slice_of` of the row's slice-column values; the key is
    ``keys[slice]``, the value whose Spark hash partition is the slice's index.
    """

    def add(batches: Iterator[Any]) -> Iterator[Any]:
        import pyarrow as pa

        for batch in batches:
            values = [batch.column(batch.schema.get_field_index(c)).to_pylist() for c in columns]
            index = [slice_of(row, slices) for row in zip(*values, strict=True)]
            yield pa.RecordBatch.from_arrays(
                [
                    *batch.columns,
                    pa.array(index, pa.int32()),
                    pa.array([False] * batch.num_rows, pa.bool_()),
                    pa.array([keys[i] for i in index], pa.int32()),
                ],
                names=[*batch.schema.names, SLICE, FILLER, KEY],
            )

    return add


def slice_writer(
    config: StreamingSinkConfig,
    transform: RowTransform,
    batch_id: int,
    slices: int,
    *,
    by_column: bool,
) -> Callable[[Iterator[Any]], Iterator[Any]]:
    """``mapInArrow``: write each slice of the task's rows (:func:`write_slice`), in order.

    ``by_column``: rows carry their slice (sorted by it, fillers marking empty slices);
    otherwise the task's partition is one slice.
    """

    def rows_of(batches: Iterator[Any]) -> Iterator[tuple[int, bool, Any]]:
        from pyspark.sql import Row

        make: Any = None
        for batch in batches:
            names = [n for n in batch.schema.names if n not in (SLICE, FILLER)]
            if make is None:
                make = Row(*names)
            cols = [batch.column(batch.schema.get_field_index(n)).to_pylist() for n in names]
            if by_column:
                slice_col = batch.column(batch.schema.get_field_index(SLICE)).to_pylist()
                filler = batch.column(batch.schema.get_field_index(FILLER)).to_pylist()
            for i, values in enumerate(zip(*cols, strict=True)):
                if by_column:
                    yield slice_col[i], bool(filler[i]), make(*values)
                else:
                    yield -1, False, make(*values)

    def write(batches: Iterator[Any]) -> Iterator[Any]:
        import itertools

        import pyarrow as pa
        from pyspark import TaskContext

        from spark_integration._streaming import write_slice

        ctx = TaskContext.get()
        attempt = ctx.attemptNumber() if ctx is not None else -1
        out = []
        if by_column:
            for index, group in itertools.groupby(rows_of(batches), key=lambda r: r[0]):
                rows = (row for _, filler, row in group if not filler)
                result = write_slice(config, transform, batch_id, index, slices, rows)
                result.attempt = attempt
                out.append(json.dumps(dataclasses.asdict(result)))
        else:
            index = ctx.partitionId() if ctx is not None else 0
            rows = (row for _, _, row in rows_of(batches))
            result = write_slice(config, transform, batch_id, index, slices, rows)
            result.attempt = attempt
            out.append(json.dumps(dataclasses.asdict(result)))
        yield pa.RecordBatch.from_arrays([pa.array(out, pa.string())], names=["result"])

    return write
