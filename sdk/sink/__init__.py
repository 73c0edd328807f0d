"""Exactly-once into a database: each batch's writes and its offsets in one transaction.

:class:`DatabaseSink` consumes with an ``exactly_once`` profile and keeps the consumed
positions in a table of the same database as the output, fenced per partition by an epoch, so
a batch's rows are visible exactly when its offsets are (docs/database-sink.md).

An internal interface, in no ``__all__``: ``psycopg_connect_args``, so that
:func:`sdk.aio.async_postgresql` connects as :func:`postgresql` does.
"""

from sdk.sink._database import Database, Position, Transaction, sqlite
from sdk.sink._dialects import DIALECTS, Dialect
from sdk.sink._postgresql import postgresql
from sdk.sink._postgresql import psycopg_connect_args as psycopg_connect_args
from sdk.sink._records import BatchSinkHandler, SinkHandler, SinkStats
from sdk.sink._sink import DatabaseSink

__all__ = [
    "DIALECTS",
    "BatchSinkHandler",
    "Database",
    "DatabaseSink",
    "Dialect",
    "Position",
    "SinkHandler",
    "SinkStats",
    "Transaction",
    "postgresql",
    "sqlite",
]
