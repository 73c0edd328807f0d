"""The asyncio database sink: the sync :class:`~sdk.sink.DatabaseSink` core, an async driver.

No second commit sequence: the sync sink's loop (claims, fenced position updates, the
failure policy, rollbacks, rewinds) runs unchanged in one worker thread. Its connection is
an async driver's connection (psycopg's ``AsyncConnection``) living on the event loop: each
statement of the core crosses to the loop, and the handler runs on the loop with the same
connection and transaction, as an :class:`AsyncTransaction`.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol, TypedDict, TypeVar, TypeVarTuple, Unpack

from sdk._client import ConsumerClient
from sdk._config import ClientConfig, ConfigMapping
from sdk.aio._bridge import LoopBridge
from sdk.errors import ConfigurationError, SdkError
from sdk.observability import Telemetry
from sdk.profiles import ConsumerProfile
from sdk.records import ConsumerRecord
from sdk.serialization import Deserializer
from sdk.sink import (
    Database,
    DatabaseSink,
    Dialect,
    SinkStats,
    Transaction,
    psycopg_connect_args,
)

__all__ = ["AsyncDatabase", "AsyncDatabaseSink", "AsyncTransaction", "async_postgresql"]

T = TypeVar("T")
R = TypeVar("R")
Ts = TypeVarTuple("Ts")


class _Run(Protocol):
    """Runs a coroutine on the loop from the worker thread; returns its result."""

    def __call__(self, coro: Coroutine[object, object, T], /) -> T: ...


class _AsyncCursor(Protocol):
    """What the core's statements call on an async driver's cursor (psycopg's)."""

    @property
    def rowcount(self) -> int: ...

    def execute(self, sql: str, params: object = ..., /) -> Coroutine[object, object, object]: ...

    def executemany(self, sql: str, rows: object, /) -> Coroutine[object, object, object]: ...

    def fetchall(self) -> Coroutine[object, object, Iterable[object]]: ...


class _AsyncConnection(Protocol):
    """What the core calls on an async driver's connection (psycopg's ``AsyncConnection``)."""

    def cursor(self) -> _AsyncCursor: ...

    def commit(self) -> Coroutine[object, object, object]: ...

    def rollback(self) -> Coroutine[object, object, object]: ...

    def close(self) -> Coroutine[object, object, object]: ...


class SinkOptions(TypedDict, total=False):
    """The keyword arguments of :class:`~sdk.sink.DatabaseSink`, passed on by the async sink."""

    key_deserializer: str | Deserializer
    value_deserializer: str | Deserializer
    dead_letter_producer_config: ConfigMapping | None
    first_start: Literal["committed", "reset"]
    poll_timeout_s: float
    retry_timeout_s: float
    client_factory: Callable[[ClientConfig], ConsumerClient] | None
    telemetry: Telemetry | Literal[False] | None
    verify_cluster: bool


class AsyncTransaction:
    """The async handler's view of the batch's transaction (never commit it yourself).

    Attributes:
        connection: The async connection (``psycopg.AsyncConnection``).
        cursor: Its cursor, open for the batch.
    """

    def __init__(self, connection: Any, cursor: Any) -> None:
        self.connection = connection
        self.cursor = cursor
        self.rearm: str | None = None  # as sdk.sink.Transaction.rearm

    async def execute(self, sql: str, params: Sequence[object] | Mapping[str, object] = ()) -> Any:
        """Run one statement in the batch's transaction; returns the cursor."""
        await self.cursor.execute(sql, params)
        return self.cursor

    async def executemany(
        self, sql: str, rows: Iterable[Sequence[object] | Mapping[str, object]]
    ) -> Any:
        """Run one statement for each row; returns the cursor."""
        await self.cursor.executemany(sql, rows)
        if self.rearm is not None:  # PostgreSQL <= 16: re-arm the idle-in-transaction timeout
            await self.connection.cursor().execute(self.rearm)
        return self.cursor


class _LoopCursor:
    """A sync cursor for the core (worker thread) over an async cursor on the loop."""

    def __init__(self, cursor: _AsyncCursor, run: _Run) -> None:
        self.async_cursor = cursor
        self._run = run

    @property
    def rowcount(self) -> int:
        return int(self.async_cursor.rowcount)

    def execute(self, sql: str, params: object = ()) -> _LoopCursor:
        self._run(self.async_cursor.execute(sql, params))
        return self

    def executemany(self, sql: str, rows: object) -> _LoopCursor:
        self._run(self.async_cursor.executemany(sql, rows))
        return self

    def fetchall(self) -> list[Any]:  # rows of the driver's values
        return list(self._run(self.async_cursor.fetchall()))


class _LoopConnection:
    """A sync DB-API connection for the core over an async connection on the loop."""

    def __init__(self, connection: _AsyncConnection, run: _Run) -> None:
        self.async_connection = connection
        self._run = run
        self._cursor: _LoopCursor | None = None
        self.async_transaction: AsyncTransaction | None = None

    def cursor(self) -> _LoopCursor:
        # one cursor per connection: the core's statements and the handler's share it
        if self._cursor is None:
            self._cursor = _LoopCursor(self.async_connection.cursor(), self._run)
            self.async_transaction = AsyncTransaction(
                self.async_connection, self._cursor.async_cursor
            )
        return self._cursor

    def commit(self) -> None:
        self._run(self.async_connection.commit())

    def rollback(self) -> None:
        self._run(self.async_connection.rollback())

    def close(self) -> None:
        self._run(self.async_connection.close())


class AsyncDatabase:
    """An async driver's database: an ``async`` connection factory and its dialect.

    Args:
        connect: ``async () -> connection`` (for example ``psycopg.AsyncConnection.connect``
            with its arguments bound).
        dialect: ``"postgresql"`` or a :class:`~sdk.sink.Dialect` whose placeholder is the
            driver's.
        positions_table: The positions table's name.
        transaction_timeout_s: As :class:`~sdk.sink.Database`.
        end_frozen_holders: As :class:`~sdk.sink.Database`.
    """

    def __init__(
        self,
        connect: Callable[[], Awaitable[Any]],
        dialect: str | Dialect = "postgresql",
        *,
        positions_table: str = "kafka_sink_positions",
        transaction_timeout_s: float | None = None,
        end_frozen_holders: bool = False,
    ) -> None:
        self.connect = connect
        self.dialect = dialect
        self.positions_table = positions_table
        self.transaction_timeout_s = transaction_timeout_s
        self.end_frozen_holders = end_frozen_holders
        Database(  # validates them all
            lambda: None,
            dialect,
            positions_table=positions_table,
            transaction_timeout_s=transaction_timeout_s,
            end_frozen_holders=end_frozen_holders,
        )


def async_postgresql(
    conninfo: str,
    *,
    transaction_timeout_s: float | None = 60.0,
    end_frozen_holders: bool = False,
    idle_in_transaction_timeout_s: float = 60.0,
    lock_timeout_s: float = 10.0,
    connect_timeout_s: float = 10.0,
    positions_table: str = "kafka_sink_positions",
) -> AsyncDatabase:
    """PostgreSQL through psycopg 3's ``AsyncConnection``; settings as :func:`sdk.sink.postgresql`.

    Raises:
        ConfigurationError: psycopg is not installed.
    """
    psycopg, kwargs = psycopg_connect_args(
        idle_in_transaction_timeout_s, lock_timeout_s, connect_timeout_s
    )

    async def connect() -> Any:
        return await psycopg.AsyncConnection.connect(conninfo, **kwargs)

    return AsyncDatabase(
        connect,
        "postgresql",
        positions_table=positions_table,
        transaction_timeout_s=transaction_timeout_s,
        end_frozen_holders=end_frozen_holders,
    )


class AsyncDatabaseSink:
    """:class:`~sdk.sink.DatabaseSink` from asyncio code, with an async database driver.

    Example::

        database = sdk.aio.async_postgresql("postgresql://app@db/orders")
        async with AsyncDatabaseSink(profile, ["orders"], database) as sink:
            await sink.run_batch(write_orders)   # async def write_orders(records, tx): ...

    :meth:`run_batch` crosses to the loop once per batch for the handler; :meth:`run` once per
    record. Cancelling the awaiting task cancels the handler in progress; its batch is rolled
    back and read again.

    Args:
        profile: ``exactly_once`` or ``at_least_once`` consumer profile.
        topics: Topics to subscribe to.
        database: An :class:`AsyncDatabase` (:func:`async_postgresql`).
        **options: The :class:`~sdk.sink.DatabaseSink` keyword arguments.

    Raises:
        ConfigurationError: As the sync sink, or a ``database`` that is not an AsyncDatabase.
    """

    def __init__(
        self,
        profile: ConsumerProfile,
        topics: Sequence[str],
        database: AsyncDatabase,
        **options: Unpack[SinkOptions],
    ) -> None:
        if not isinstance(database, AsyncDatabase):
            raise ConfigurationError(
                "database: AsyncDatabaseSink needs an sdk.aio.AsyncDatabase (for example "
                f"sdk.aio.async_postgresql(...)), got {type(database).__name__}",
                field="database",
            )
        self._database = database
        self._loop: asyncio.AbstractEventLoop | None = None
        bridged = Database(
            self._connect,
            database.dialect,
            positions_table=database.positions_table,
            transaction_timeout_s=database.transaction_timeout_s,
            end_frozen_holders=database.end_frozen_holders,
        )
        self._sync = DatabaseSink(profile, topics, bridged, **options)
        # every call into the sync sink runs here: one thread owns the librdkafka client
        self._worker = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="aio-sink")
        self._bridge = LoopBridge(self._worker, self._sync.stop)

    @property
    def stats(self) -> SinkStats:
        """The sync sink's counters."""
        return self._sync.stats

    @property
    def sync(self) -> DatabaseSink:
        """The sync sink underneath."""
        return self._sync

    async def __aenter__(self) -> AsyncDatabaseSink:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def stop(self) -> None:
        """Make the current run return after the batch in hand; safe from any thread."""
        self._sync.stop()

    async def close(self) -> None:
        """Leave the group, close the connection (in the worker thread)."""
        self._loop = asyncio.get_running_loop()
        try:
            await self._call(self._sync.close)
        finally:
            self._worker.shutdown(wait=True)

    async def run(
        self,
        handler: Callable[[ConsumerRecord, AsyncTransaction], Awaitable[object]],
        *,
        max_records: int | None = None,
        idle_timeout_s: float | None = None,
        handle_sigterm: bool | None = None,
    ) -> SinkStats:
        """Await ``handler(record, tx)`` per record; each polled batch is one transaction.

        Raises:
            asyncio.CancelledError: The awaiting task was cancelled (the batch in hand was
                rolled back).
            HandlerError, SerializationError, DatabaseError, KafkaClientError: As the sync
                ``run``.
        """
        return await self._drive(
            self._sync.run, handler, max_records, idle_timeout_s, handle_sigterm
        )

    async def run_batch(
        self,
        handler: Callable[[list[ConsumerRecord], AsyncTransaction], Awaitable[object]],
        *,
        max_records: int | None = None,
        idle_timeout_s: float | None = None,
        handle_sigterm: bool | None = None,
    ) -> SinkStats:
        """Await ``handler(records, tx)`` per polled batch (one loop crossing per batch).

        Raises:
            asyncio.CancelledError: See :meth:`run`.
            HandlerError, SerializationError, DatabaseError, KafkaClientError: As the sync
                ``run_batch``.
        """
        return await self._drive(
            self._sync.run_batch, handler, max_records, idle_timeout_s, handle_sigterm
        )

    async def _drive(
        self,
        run: Callable[..., SinkStats],
        handler: Callable[[R, AsyncTransaction], Awaitable[object]],
        max_records: int | None,
        idle_timeout_s: float | None,
        handle_sigterm: bool | None,
    ) -> SinkStats:
        self._loop = asyncio.get_running_loop()

        def both(pair: tuple[R, AsyncTransaction]) -> Awaitable[object]:
            return handler(*pair)

        crossing = self._bridge.sync_handler(both, self._loop)

        def on_core(arg: R, tx: Transaction) -> object:
            connection = tx.connection
            if not isinstance(connection, _LoopConnection) or connection.async_transaction is None:
                raise SdkError("AsyncDatabaseSink: the transaction is not the async driver's")
            connection.async_transaction.rearm = tx.rearm
            return crossing((arg, connection.async_transaction))

        return await self._bridge.run(
            functools.partial(  # SIGTERM is the bridge's (on the loop), not the worker's
                run,
                on_core,
                max_records=max_records,
                idle_timeout_s=idle_timeout_s,
                handle_sigterm=False,
            ),
            handle_sigterm=handle_sigterm,
        )

    def _connect(self) -> _LoopConnection:
        """In the worker: open the async connection on the loop."""
        loop = self._loop
        if loop is None:
            raise SdkError("AsyncDatabaseSink: connect outside a run")

        def run(coro: Coroutine[object, object, T]) -> T:
            return asyncio.run_coroutine_threadsafe(coro, loop).result()

        async def opened() -> _AsyncConnection:
            connection: _AsyncConnection = await self._database.connect()  # the driver's
            return connection

        return _LoopConnection(run(opened()), run)

    async def _call(self, fn: Callable[[*Ts], T], *args: *Ts) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, functools.partial(fn, *args))
