"""What a database must provide to the sink: transactions, an upsert and a conditional update.

A :class:`Dialect` holds the SQL the positions table needs, in the driver's parameter style, and
says which driver errors are *transient* (the connection is gone, a lock wait timed out, a
deadlock was broken): those roll the batch back and are retried; any other error the handler
raises is the handler's failure and goes to the failure policy.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sdk.errors import ConfigurationError

__all__ = ["DIALECTS", "Dialect", "SessionInfo", "resolve_dialect"]


@dataclass(frozen=True)
class SessionInfo:
    """What a new connection was set up with (:attr:`Dialect.configure`).

    Attributes:
        application_name: How the session names itself to the server (PostgreSQL's
            ``pg_stat_activity.application_name``), or ``""``.
        bounded: Whether the server ends a transaction that stays open longer than the
            database's ``transaction_timeout_s`` whatever the session was doing (PostgreSQL 17
            and later).
        server_version: The server's version number (PostgreSQL's ``server_version_num``), 0
            when unknown.
    """

    application_name: str = ""
    bounded: bool = False
    server_version: int = 0


def _sqlite_transient(exc: BaseException) -> bool:
    # "database is locked" / "database table is locked": another writer held the lock past
    # busy_timeout. Other OperationalErrors (no such table, syntax) are the caller's bug.
    return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)


def _postgresql_lock_wait(exc: BaseException) -> bool:
    try:
        from psycopg import errors
    except ImportError:  # pragma: no cover - the dialect is only used with psycopg
        return False
    return isinstance(exc, errors.LockNotAvailable)  # lock_timeout ran out


def _postgresql_configure(cursor: Any, name: str, bound_s: float | None) -> SessionInfo:
    """Name the session and bound its transactions, once per connection (then committed).

    ``transaction_timeout`` (PostgreSQL 17 and later) ends a session whose transaction has
    been open for longer, whatever it is doing: idle after a statement, between the messages
    of a pipeline (psycopg's ``executemany``, where ``idle_in_transaction_session_timeout`` is
    not armed), or inside a ``COPY`` whose client went silent. Older servers do not know the
    setting (setting it would fail), so it is set only where the server has it.
    """
    cursor.execute(
        "SELECT current_setting('server_version_num')::int, current_setting('application_name')"
    )
    version, current = cursor.fetchall()[0]
    if current:  # the application's own name (conninfo) wins; it is reported as it is
        name = str(current)
    else:
        cursor.execute("SELECT set_config('application_name', %s, false)", (name,))
    bounded = bound_s is not None and bound_s > 0 and int(version) >= 170000
    if bounded and bound_s is not None:
        milliseconds = max(1, int(bound_s * 1000))
        cursor.execute("SELECT set_config('transaction_timeout', %s, false)", (str(milliseconds),))
    return SessionInfo(application_name=name, bounded=bounded, server_version=int(version))


def _postgresql_transient(exc: BaseException) -> bool:
    try:
        import psycopg
        from psycopg import errors
    except ImportError:  # pragma: no cover - the dialect is only used with psycopg
        return False
    # IdleInTransactionSessionTimeout and TransactionTimeout are not OperationalErrors: the
    # server ended the session of a member that sat in a transaction too long (a frozen
    # zombie); the transaction is gone.
    return isinstance(
        exc,
        psycopg.OperationalError
        | psycopg.InterfaceError
        | errors.IdleInTransactionSessionTimeout
        | errors.TransactionTimeout,
    )


@dataclass(frozen=True)
class Dialect:
    """The SQL of the positions table for one database, and its transient errors.

    Every statement is a template with ``{table}`` and ``{p}`` (the driver's placeholder).
    Columns: ``group_id``, ``topic``, ``kafka_partition``, ``next_offset`` (NULL until the
    first batch commits), ``epoch`` and ``updated_at``; primary key
    ``(group_id, topic, kafka_partition)``.

    Attributes:
        name: The dialect's name (``sqlite``, ``postgresql``).
        placeholder: The driver's parameter marker (``?`` for sqlite3, ``%s`` for psycopg).
        create: ``CREATE TABLE IF NOT EXISTS`` of the positions table.
        claim: Insert the partition's row with epoch 1, or add 1 to the existing row's epoch
            (an upsert that takes the row lock). Parameters: group, topic, partition.
        advance: Set ``next_offset`` only if ``epoch`` is still the one the member claimed
            (a conditional update; rowcount 0 means fenced). Parameters: next_offset, group,
            topic, partition, epoch.
        advance_many: Optional: :attr:`advance` for several partitions in one statement that
            returns the (topic, partition) of each row it updated (one round trip per batch);
            ``{rows}`` is replaced by one :attr:`advance_row` per partition. Parameters: per
            row (topic, partition, next_offset, epoch), then group.
        advance_row: One row of ``advance_many``'s VALUES list.
        select: The group's rows. Parameter: group.
        begin: The statement that opens a transaction, or None when the driver opens one
            implicitly (DB-API 2.0 default).
        is_transient: Whether a driver error is transient (retry the batch) rather than a
            failure of the handler.
        is_lock_wait: Whether a (transient) driver error is a lock wait that ran out: the
            server already waited, so the sink retries at once and names the lock's holders.
        configure: Optional: ``configure(cursor, application_name, transaction_timeout_s)``,
            run once on every new connection (then committed): names the session and bounds
            its transactions where the server can; returns what it set.
        holders: Optional: the sessions in a transaction that hold a write lock on the
            positions table, oldest first, as rows of (pid, application_name, state, seconds
            in the transaction). Parameter: the table's name.
        terminate: Optional: ends another session (for ``end_frozen_holders``). Parameter: its
            pid.
        rearm: Optional: a statement run after each :meth:`Transaction.executemany` on a
            connection whose transactions :attr:`configure` could not bound (PostgreSQL 16 and
            older: a pipelined ``executemany`` leaves ``idle_in_transaction_session_timeout``
            unarmed until the next plain statement).
    """

    name: str
    placeholder: str
    create: str
    claim: str = (
        "INSERT INTO {table} (group_id, topic, kafka_partition, next_offset, epoch) "
        "VALUES ({p}, {p}, {p}, NULL, 1) ON CONFLICT (group_id, topic, kafka_partition) "
        "DO UPDATE SET epoch = {table}.epoch + 1, updated_at = CURRENT_TIMESTAMP"
    )
    advance: str = (
        "UPDATE {table} SET next_offset = {p}, updated_at = CURRENT_TIMESTAMP "
        "WHERE group_id = {p} AND topic = {p} AND kafka_partition = {p} AND epoch = {p}"
    )
    select: str = (
        "SELECT topic, kafka_partition, next_offset, epoch FROM {table} WHERE group_id = {p}"
    )
    advance_many: str | None = None
    advance_row: str = ""
    begin: str | None = None
    is_transient: Callable[[BaseException], bool] = field(default=lambda exc: False)
    is_lock_wait: Callable[[BaseException], bool] = field(default=lambda exc: False)
    configure: Callable[[Any, str, float | None], SessionInfo] | None = None
    holders: str | None = None
    terminate: str | None = None
    rearm: str | None = None

    def sql(self, statement: str, table: str, rows: int = 0) -> str:
        """Fill a template with the table name, the placeholder and ``rows`` VALUES rows."""
        values = ", ".join([self.advance_row.format(p=self.placeholder)] * rows)
        return statement.format(table=table, p=self.placeholder, rows=values)


_SQLITE = Dialect(
    name="sqlite",
    placeholder="?",
    create=(
        "CREATE TABLE IF NOT EXISTS {table} (group_id TEXT NOT NULL, topic TEXT NOT NULL, "
        "kafka_partition INTEGER NOT NULL, next_offset INTEGER, epoch INTEGER NOT NULL, "
        "updated_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP, "
        "PRIMARY KEY (group_id, topic, kafka_partition))"
    ),
    # IMMEDIATE takes the write lock up front (waiting busy_timeout): a deferred transaction
    # that reads first and writes later fails at once with SQLITE_BUSY when another process
    # committed in between, instead of waiting.
    begin="BEGIN IMMEDIATE",
    is_transient=_sqlite_transient,
)

_POSTGRESQL = Dialect(
    name="postgresql",
    placeholder="%s",
    create=(
        "CREATE TABLE IF NOT EXISTS {table} (group_id TEXT NOT NULL, topic TEXT NOT NULL, "
        "kafka_partition INTEGER NOT NULL, next_offset BIGINT, epoch BIGINT NOT NULL, "
        "updated_at TIMESTAMPTZ NOT NULL DEFAULT now(), "
        "PRIMARY KEY (group_id, topic, kafka_partition))"
    ),
    advance_many=(
        "UPDATE {table} AS t SET next_offset = v.next_offset, updated_at = CURRENT_TIMESTAMP "
        "FROM (VALUES {rows}) AS v (topic, kafka_partition, next_offset, epoch) "
        "WHERE t.group_id = {p} AND t.topic = v.topic "
        "AND t.kafka_partition = v.kafka_partition AND t.epoch = v.epoch "
        "RETURNING t.topic, t.kafka_partition"
    ),
    advance_row="({p}::text, {p}::integer, {p}::bigint, {p}::bigint)",
    is_transient=_postgresql_transient,
    is_lock_wait=_postgresql_lock_wait,
    configure=_postgresql_configure,
    # a transaction that wrote the positions table holds RowExclusiveLock on it until it ends:
    # the sessions that may hold the row locks a claim waits for
    holders=(
        "SELECT a.pid, coalesce(a.application_name, ''), coalesce(a.state, ''), "
        "extract(epoch FROM now() - a.xact_start)::float8 "
        "FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.locktype = 'relation' AND l.granted AND l.mode = 'RowExclusiveLock' "
        "AND l.relation = to_regclass({p}) AND a.pid <> pg_backend_pid() "
        "AND a.xact_start IS NOT NULL ORDER BY a.xact_start"
    ),
    terminate="SELECT pg_terminate_backend({p})",
    rearm="SELECT 1",
)

DIALECTS: dict[str, Dialect] = {"sqlite": _SQLITE, "postgresql": _POSTGRESQL}
"""The built-in dialects by name."""


def resolve_dialect(value: str | Dialect) -> Dialect:
    """A dialect by name (``sqlite``, ``postgresql``; ``postgres`` too) or as given.

    Raises:
        ConfigurationError: An unknown name (the message lists the valid ones).
    """
    if isinstance(value, Dialect):
        return value
    name = {"postgres": "postgresql", "sqlite3": "sqlite"}.get(value, value)
    if name not in DIALECTS:
        raise ConfigurationError(
            f"dialect: unknown dialect {value!r}; valid: {', '.join(sorted(DIALECTS))}, or a "
            "sdk.sink.Dialect for another DB-API 2.0 driver",
            field="dialect",
        )
    return DIALECTS[name]
