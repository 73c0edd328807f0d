"""PostgreSQL through psycopg 3: the connection settings that bound a frozen member."""

from __future__ import annotations

from typing import Any

from sdk.errors import ConfigurationError
from sdk.sink._database import Database

__all__ = ["postgresql", "psycopg_connect_args"]


def psycopg_connect_args(
    idle_in_transaction_timeout_s: float, lock_timeout_s: float, connect_timeout_s: float
) -> tuple[Any, dict[str, Any]]:
    """psycopg, and the keyword arguments of its (sync or async) ``connect``.

    ``options`` carries the session timeouts that bound a frozen member's row locks.

    Raises:
        ConfigurationError: psycopg is not installed.
    """
    try:
        import psycopg
    except ImportError as exc:
        raise ConfigurationError(
            "the postgresql sink needs psycopg 3: pip install 'kafka-semantics[postgres]'",
            field="database",
        ) from exc
    options = (
        f"-c idle_in_transaction_session_timeout={int(idle_in_transaction_timeout_s * 1000)} "
        f"-c lock_timeout={int(lock_timeout_s * 1000)}"
    )
    return psycopg, {"options": options, "connect_timeout": max(1, int(connect_timeout_s))}


def postgresql(
    conninfo: str,
    *,
    transaction_timeout_s: float | None = 60.0,
    end_frozen_holders: bool = False,
    idle_in_transaction_timeout_s: float = 60.0,
    lock_timeout_s: float = 10.0,
    connect_timeout_s: float = 10.0,
    positions_table: str = "kafka_sink_positions",
) -> Database:
    """A PostgreSQL database through psycopg 3 (``pip install kafka-semantics[postgres]``).

    Args:
        conninfo: A libpq connection string or URI.
        transaction_timeout_s: PostgreSQL 17 and later: the server ends a session whose batch
            transaction has been open this long, whatever it was doing (a frozen member
            holding the positions rows' locks), so the partitions' new owner is never stalled
            for longer. Keep it above the longest batch transaction (the sink warns when one
            takes half of it). None: no such bound. Ignored by older servers (see
            docs/database-sink.md).
        end_frozen_holders: A member whose claim waits for another member's locks ends that
            member's session when its transaction is older than ``transaction_timeout_s``
            and it belongs to the same group (``pg_terminate_backend``: the same database
            role, or ``pg_signal_backend``). Off by default. It bounds what the server's
            timeouts do not: a member frozen inside a ``COPY``, and every frozen member on
            PostgreSQL 16 and older.
        idle_in_transaction_timeout_s: The server ends a session that sits inside a
            transaction this long after a statement; the bound on servers before
            PostgreSQL 17. Keep it above the handler's longest pause between statements.
        lock_timeout_s: A statement waits this long for a row lock before it fails (and the
            sink retries).
        connect_timeout_s: libpq's connect timeout.
        positions_table: The positions table's name.

    Raises:
        ConfigurationError: psycopg is not installed.
    """
    psycopg, kwargs = psycopg_connect_args(
        idle_in_transaction_timeout_s, lock_timeout_s, connect_timeout_s
    )

    def connect() -> Any:
        return psycopg.connect(conninfo, **kwargs)

    return Database(
        connect,
        "postgresql",
        positions_table=positions_table,
        transaction_timeout_s=transaction_timeout_s,
        end_frozen_holders=end_frozen_holders,
    )
