"""The database side of the sink: connections, the positions table, and the handler's view.

One :class:`Database` describes where the output and the positions live; :class:`Session` is
one DB-API 2.0 connection with the few calls the commit sequence needs. Every driver error
crosses into the SDK here, as :class:`~sdk.errors.DatabaseError` (or
:class:`~sdk.errors.DatabaseUnavailableError` when the dialect calls it transient).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sdk.errors import ConfigurationError, DatabaseError, DatabaseUnavailableError
from sdk.sink._dialects import Dialect, SessionInfo, resolve_dialect

__all__ = [
    "Database",
    "Holder",
    "Position",
    "Session",
    "Transaction",
    "sqlite",
]

Partition = tuple[str, int]
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$")
_COLUMNS = "group_id, topic, kafka_partition, next_offset, epoch, updated_at"


@dataclass(frozen=True)
class Position:
    """A partition's row in the positions table.

    Attributes:
        next_offset: The next offset to consume, or None before the first committed batch.
        epoch: The claim this member holds; a commit under an older epoch is refused.
    """

    next_offset: int | None
    epoch: int


@dataclass(frozen=True)
class Holder:
    """A database session in a transaction that holds write locks on the positions table.

    Attributes:
        pid: The server process id (``SELECT pg_terminate_backend(pid)`` ends it).
        application_name: How the session names itself (a sink's: ``ksem-sink GROUP
            HOST:PID``).
        state: ``idle in transaction``, ``active``, ...
        seconds: How long its transaction has been open.
    """

    pid: int
    application_name: str
    state: str
    seconds: float

    def __str__(self) -> str:
        name = self.application_name or "no application_name"
        return f"pid {self.pid} ({name}; {self.state}, in its transaction for {self.seconds:.1f}s)"


@contextmanager
def translating(dialect: Dialect, context: str) -> Iterator[None]:
    """Translate the driver's errors raised in the block (the sink's one seam for them).

    Raises:
        DatabaseUnavailableError: A transient error (connection refused or lost, lock wait
            timed out, deadlock, a session ended by the server).
        DatabaseError: Any other driver error.
    """
    try:
        yield
    except DatabaseError:
        raise
    except Exception as exc:
        kind = DatabaseUnavailableError if dialect.is_transient(exc) else DatabaseError
        raise kind(f"{context} failed: {type(exc).__name__}: {exc}".strip()) from exc


class Transaction:
    """The handler's view of the batch's database transaction.

    Write with :meth:`execute` / :meth:`executemany` (the driver's own SQL and placeholders),
    or use :attr:`connection` directly. Never commit or roll back yourself: the sink commits
    the handler's writes together with the batch's positions, or rolls both back.

    Attributes:
        connection: The DB-API 2.0 connection (a ``sqlite3.Connection`` or
            ``psycopg.Connection``) the transaction runs on.
        cursor: A cursor of that connection, open for the batch.
        rearm: A statement run after each :meth:`executemany`, on a cursor of its own, or
            None (see :attr:`sdk.sink.Dialect.rearm`).
    """

    def __init__(self, connection: Any, cursor: Any) -> None:
        self.connection = connection
        self.cursor = cursor
        self.rearm: str | None = None

    def execute(self, sql: str, params: Sequence[object] | Mapping[str, object] = ()) -> Any:
        """Run one statement in the batch's transaction; returns the cursor."""
        self.cursor.execute(sql, params)
        return self.cursor

    def executemany(self, sql: str, rows: Iterable[Sequence[object] | Mapping[str, object]]) -> Any:
        """Run one statement for each row of ``rows``; returns the cursor."""
        self.cursor.executemany(sql, rows)
        if self.rearm is not None:  # PostgreSQL <= 16: re-arm the idle-in-transaction timeout
            self.connection.cursor().execute(self.rearm)
        return self.cursor


class Session:
    """One connection, driven by the sink: begin, positions, savepoints, commit, rollback.

    Args:
        connection: An open DB-API 2.0 connection.
        dialect: Its dialect.
        table: The positions table.
    """

    def __init__(self, connection: Any, dialect: Dialect, table: str) -> None:
        self.connection = connection
        self.dialect = dialect
        self.table = table
        self.transaction = Transaction(connection, connection.cursor())
        self.info = SessionInfo()
        self._sql = {
            name: dialect.sql(getattr(dialect, name), table)
            for name in ("claim", "advance", "select")
        }

    def configure(self, application_name: str, transaction_timeout_s: float | None) -> None:
        """Name the session and bound its transactions where the dialect can (then commit).

        Raises:
            DatabaseUnavailableError: Transient.
            DatabaseError: Otherwise.
        """
        if self.dialect.configure is None:
            return
        with translating(self.dialect, "setting up the session"):
            try:
                self.info = self.dialect.configure(
                    self.transaction.cursor, application_name, transaction_timeout_s
                )
                self.connection.commit()
            except BaseException:
                self.rollback()
                raise
        if not self.info.bounded:
            self.transaction.rearm = self.dialect.rearm

    def holders(self) -> list[Holder]:
        """The other sessions in a transaction holding write locks on the positions table.

        Best effort, for a message: ``[]`` when the dialect cannot tell or the query fails.
        """
        if self.dialect.holders is None:
            return []
        try:
            sql = self.dialect.sql(self.dialect.holders, self.table)
            rows = self._execute(sql, (self.table,)).fetchall()
            self.connection.rollback()
        except Exception:
            self.rollback()
            return []
        return [Holder(int(p), str(n), str(s), float(t or 0.0)) for p, n, s, t in rows]

    def terminate(self, pid: int) -> bool:
        """End another session (PostgreSQL: ``pg_terminate_backend``); False if refused.

        Raises:
            DatabaseUnavailableError: Transient.
            DatabaseError: The dialect cannot, or the role may not (``pg_signal_backend``).
        """
        if self.dialect.terminate is None:
            raise DatabaseError(f"the {self.dialect.name} dialect cannot end another session")
        with translating(self.dialect, f"ending session {pid}"):
            try:
                (ended,) = self._execute(
                    self.dialect.sql(self.dialect.terminate, self.table), (pid,)
                ).fetchall()[0]
                self.connection.rollback()
            except BaseException:
                self.rollback()
                raise
        return bool(ended)

    def _execute(self, sql: str, params: Sequence[object] = ()) -> Any:
        cursor = self.transaction.cursor
        cursor.execute(sql, params)
        return cursor

    def begin(self) -> None:
        """Open the batch's transaction (a no-op for drivers that open one implicitly)."""
        if self.dialect.begin:
            with translating(self.dialect, "BEGIN"):
                self._execute(self.dialect.begin)

    def commit(self) -> None:
        """Commit.

        Raises:
            DatabaseUnavailableError: The outcome is unknown (re-read the positions).
            DatabaseError: The database refused the commit.
        """
        with translating(self.dialect, "COMMIT"):
            self.connection.commit()

    def rollback(self) -> None:
        """Roll back; a connection already gone has nothing left to roll back."""
        try:
            self.connection.rollback()
        except Exception:  # the transaction died with the connection
            return

    def savepoint(self, name: str) -> None:
        """``SAVEPOINT name``."""
        self._execute(f"SAVEPOINT {name}")

    def rollback_to(self, name: str) -> None:
        """``ROLLBACK TO SAVEPOINT name``."""
        self._execute(f"ROLLBACK TO SAVEPOINT {name}")

    def release(self, name: str) -> None:
        """``RELEASE SAVEPOINT name``."""
        self._execute(f"RELEASE SAVEPOINT {name}")

    def claim(self, group: str, partitions: Sequence[Partition]) -> dict[Partition, Position]:
        """Bump each partition's epoch and read its position, in one transaction (committed).

        Partitions are locked in sorted order, so two members never wait on each other.

        Raises:
            DatabaseUnavailableError: Transient (for example a frozen former owner still holds
                a row lock past ``lock_timeout``); retry.
            DatabaseError: Otherwise.
        """
        with translating(self.dialect, "claiming partitions in the positions table"):
            try:
                self.begin()
                for topic, partition in sorted(partitions):
                    self._execute(self._sql["claim"], (group, topic, partition))
                rows = self.read(group)
                self.connection.commit()
            except BaseException:
                self.rollback()
                raise
        return {tp: rows[tp] for tp in partitions}

    def read(self, group: str) -> dict[Partition, Position]:
        """The group's positions (in the current transaction, if one is open)."""
        with translating(self.dialect, "reading the positions table"):
            rows = self._execute(self._sql["select"], (group,)).fetchall()
        return {
            (str(t), int(p)): Position(n if n is None else int(n), int(e)) for t, p, n, e in rows
        }

    def advance(
        self, group: str, ends: dict[Partition, int], epochs: dict[Partition, int]
    ) -> list[Partition]:
        """Move each partition's position to its batch end, if its epoch is still ours.

        Returns:
            The partitions whose epoch changed (fenced: another member claimed them).

        Raises:
            DatabaseUnavailableError: Transient; the transaction must be rolled back.
            DatabaseError: Otherwise.
        """
        with translating(self.dialect, "advancing the positions"):
            many = self.dialect.advance_many
            if many is not None and len(ends) > 1:
                keys = sorted(ends)
                params: list[object] = []
                for tp in keys:
                    params += [tp[0], tp[1], ends[tp], epochs[tp]]
                params.append(group)
                sql = self.dialect.sql(many, self.table, len(keys))
                moved = {(str(t), int(p)) for t, p in self._execute(sql, params).fetchall()}
                return [tp for tp in keys if tp not in moved]
            fenced = []
            for tp in sorted(ends):
                topic, partition = tp
                cursor = self._execute(
                    self._sql["advance"], (ends[tp], group, topic, partition, epochs[tp])
                )
                if cursor.rowcount != 1:
                    fenced.append(tp)
        return fenced

    def close(self) -> None:
        """Close the connection (errors ignored: it may be gone already)."""
        try:
            self.connection.close()
        except Exception:
            return


class Database:
    """Where the sink writes: a connection factory, its dialect and the positions table.

    Use :func:`sqlite` or :func:`postgresql`; any other DB-API 2.0 driver plugs in with a
    :class:`~sdk.sink.Dialect` (its upsert and conditional update).

    Args:
        connect: Opens a new DB-API 2.0 connection (called again after a connection is lost).
        dialect: ``"sqlite"``, ``"postgresql"`` or a :class:`~sdk.sink.Dialect`.
        positions_table: The positions table's name (``schema.table`` allowed).
        create_table: Create the positions table if it does not exist. An existing table
            with other columns is refused, never altered.
        transaction_timeout_s: The longest a batch transaction may stay open: where the
            dialect can (PostgreSQL 17 and later), the server ends the session past it, so a
            frozen member never holds its partitions' positions rows for longer. None: no
            bound.
        end_frozen_holders: When a claim's lock wait runs out, end the sessions of the same
            group (named by the sink) whose transaction has been open for longer than
            ``transaction_timeout_s`` (PostgreSQL: ``pg_terminate_backend``; the same role,
            or ``pg_signal_backend``). For what the server's bound cannot end: a member
            frozen inside a ``COPY``, any frozen member on PostgreSQL 16 and older.

    Raises:
        ConfigurationError: An unknown dialect or a positions table name that is not a plain
            SQL identifier.
    """

    def __init__(
        self,
        connect: Callable[[], Any],
        dialect: str | Dialect,
        *,
        positions_table: str = "kafka_sink_positions",
        create_table: bool = True,
        transaction_timeout_s: float | None = None,
        end_frozen_holders: bool = False,
    ) -> None:
        if end_frozen_holders and transaction_timeout_s is None:
            raise ConfigurationError(
                "end_frozen_holders: needs transaction_timeout_s (a session is frozen when its "
                "transaction has been open for longer)",
                field="end_frozen_holders",
            )
        if transaction_timeout_s is not None and transaction_timeout_s <= 0:
            raise ConfigurationError(
                f"transaction_timeout_s: {transaction_timeout_s!r}; give a positive number of "
                "seconds, or None for no bound",
                field="transaction_timeout_s",
            )
        if not _IDENTIFIER.match(positions_table):
            raise ConfigurationError(
                f"positions_table: {positions_table!r} is not a plain SQL identifier "
                "(letters, digits, _; optionally schema.table)",
                field="positions_table",
            )
        self.dialect = resolve_dialect(dialect)
        self.positions_table = positions_table
        self.create_table = create_table
        self.transaction_timeout_s = transaction_timeout_s
        self.end_frozen_holders = end_frozen_holders
        self._connect = connect
        self._checked = False

    def session(self, application_name: str = "") -> Session:
        """Open a connection; the first one creates or checks the positions table.

        Args:
            application_name: How the session names itself to the server, unless the
                connection string names it already (PostgreSQL).

        Raises:
            DatabaseUnavailableError: The database refused the connection.
            DatabaseError: The positions table has other columns than the sink's, or another
                driver error.
        """
        try:
            connection = self._connect()
        except Exception as exc:
            raise DatabaseUnavailableError(
                f"connecting to the {self.dialect.name} database failed: "
                f"{type(exc).__name__}: {exc}"
            ) from exc
        session = Session(connection, self.dialect, self.positions_table)
        try:
            session.configure(application_name, self.transaction_timeout_s)
        except BaseException:
            session.close()
            raise
        if not self._checked:
            try:
                self._check_table(session)
            except BaseException:
                session.close()
                raise
            self._checked = True
        return session

    def _check_table(self, session: Session) -> None:
        table = self.positions_table
        try:
            with translating(self.dialect, f"creating the positions table {table}"):
                if self.create_table:
                    session.begin()
                    session.transaction.cursor.execute(self.dialect.sql(self.dialect.create, table))
                    session.connection.commit()
        except DatabaseUnavailableError:
            raise
        except DatabaseError:
            # PostgreSQL's CREATE TABLE IF NOT EXISTS is not safe against itself: of several
            # sinks starting at once, the others fail on the catalog's unique index. The table
            # exists then; the column check below says whether it is usable.
            session.rollback()
        try:
            session.transaction.cursor.execute(f"SELECT {_COLUMNS} FROM {table} WHERE 1 = 0")
            session.transaction.cursor.fetchall()
            session.connection.rollback()
        except Exception as exc:
            session.rollback()
            if self.dialect.is_transient(exc):
                raise DatabaseUnavailableError(f"checking {table} failed: {exc}") from exc
            hint = "" if self.create_table else " (create_table=False: create it first)"
            raise DatabaseError(
                f"positions table {table}: missing or not the sink's shape ({exc}){hint}. It "
                f"needs the columns {_COLUMNS} with the primary key (group_id, topic, "
                "kafka_partition); the SDK never alters an existing table: rename the old one "
                "or choose another positions_table (docs/database-sink.md, Migrating)"
            ) from exc


def sqlite(
    path: str, *, busy_timeout_s: float = 30.0, positions_table: str = "kafka_sink_positions"
) -> Database:
    """A SQLite database file, shared safely by several processes (WAL).

    Args:
        path: The database file.
        busy_timeout_s: How long a writer waits for another process's write lock.
        positions_table: The positions table's name.
    """

    def connect() -> sqlite3.Connection:
        # isolation_level=None: the sink opens every transaction itself (BEGIN IMMEDIATE)
        connection = sqlite3.connect(path, timeout=busy_timeout_s, isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a power loss may drop the last commits, but output and positions
        # together, so the batch is simply consumed again
        connection.execute("PRAGMA synchronous=NORMAL")
        return connection

    return Database(connect, "sqlite", positions_table=positions_table)
