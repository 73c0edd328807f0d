"""Exactly-once into a database: each batch's writes and its offsets in one transaction.

:class:`DatabaseSink` consumes with an ``exactly_once`` profile and keeps the consumed
positions in a table of the same database as the output, fenced per partition by an epoch, so
a batch's rows are visible exactly when its offsets are (docs/database-sink.md).

An internal interface, in no ``__all__``: ``psycopg_connect_args``, so that
:func:`sdk.aio.async_postgresql` connects as :func:`postgresql` does.
"""

from typing import Any

from sdk._deprecation import deprecated_name
from sdk.sink import _database, _records
from sdk.sink._database import Database, Transaction, sqlite
from sdk.sink._dialects import DIALECTS, Dialect
from sdk.sink._postgresql import postgresql
from sdk.sink._postgresql import psycopg_connect_args as psycopg_connect_args
from sdk.sink._records import SinkStats
from sdk.sink._sink import DatabaseSink

__all__ = [
    "DIALECTS",
    "Database",
    "DatabaseSink",
    "Dialect",
    "SinkStats",
    "Transaction",
    "postgresql",
    "sqlite",
]

_TYPING = "it is no longer exported: a handler is any callable taking {} and the Transaction"
_DEPRECATED: dict[str, tuple[str, object]] = {
    "SinkHandler": (_TYPING.format("a ConsumerRecord"), _records.SinkHandler),
    "BatchSinkHandler": (_TYPING.format("a list of ConsumerRecords"), _records.BatchSinkHandler),
    "Position": ("it is internal to the sink and no longer exported", _database.Position),
}


def __getattr__(name: str) -> Any:
    """Names no longer exported: deprecated, removed in 0.3.

    ``SinkHandler``, ``BatchSinkHandler`` (a handler is any callable) and ``Position``.
    """
    return deprecated_name(__name__, name, _DEPRECATED)
