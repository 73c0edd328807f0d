"""The database side of the sink kill tests: PostgreSQL or SQLite.

Each side shows a SIGKILL landing inside a transaction in its own way (``pg_stat_activity``
from outside; the handler's marker file on SQLite), freezes a zombie outside a transaction,
and counts lost and duplicated records by SQL against the input.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import psycopg

from sdk.sink import postgresql
from tests.sdk.consumer._support import wait_for
from tests.sdk.sink._kill_workers import Proc, Workers

IDLE_IN_TRANSACTION_S = 5.0
LOCK_TIMEOUT_S = 1.0
OUT = "CREATE TABLE out (part INTEGER NOT NULL, off BIGINT NOT NULL, value BIGINT NOT NULL)"
INPUT = "CREATE TABLE input (part INTEGER NOT NULL, off BIGINT NOT NULL, value BIGINT NOT NULL)"


@dataclass
class Kill:
    """A SIGKILL and the evidence that it landed inside a transaction.

    ``age_s`` is how long before the observation the handler's INSERT ended (PostgreSQL:
    ``state_change`` of a backend ``idle in transaction`` whose last query is that INSERT;
    SQLite: the marker the handler writes after it); ``latency_s`` the time from the
    observation's start to the kill. The handler sleeps ``delay_s`` after its INSERT, so the
    transaction cannot commit before, and ``age_s + latency_s < delay_s`` proves the kill
    landed inside it.
    """

    wid: str
    observed: str
    age_s: float
    latency_s: float
    inside: bool


class Side(Protocol):
    """What the scenario needs of the database, PostgreSQL or SQLite."""

    def worker_args(self) -> dict[str, Any]: ...

    def create_out(self) -> None: ...

    def positions(self, group: str) -> dict[int, tuple[int | None, int]]: ...

    def rows_per_value(self, values: list[int]) -> dict[int, int]: ...

    def distinct_values(self) -> int: ...

    def kill_inside(self, workers: Workers, delay_s: float, timeout: float) -> Kill: ...

    def after_kill(self, kill: Kill) -> None: ...

    def freeze(self, proc: Proc) -> str: ...

    def load_and_count(self, inputs: list[tuple[int, int, int]]) -> dict[str, int]: ...

    def close(self) -> None: ...


COUNTS = {
    "lost": "SELECT count(*) FROM input i WHERE NOT EXISTS "
    "(SELECT 1 FROM out o WHERE o.value = i.value)",
    "duplicated": "SELECT count(*) FROM (SELECT value FROM out GROUP BY value "
    "HAVING count(*) > 1) d",
    "duplicate_rows": "SELECT (SELECT count(*) FROM out) - (SELECT count(DISTINCT value) FROM out)",
    "misplaced": "SELECT count(*) FROM out o LEFT JOIN input i ON i.value = o.value "
    "WHERE i.value IS NULL OR i.part <> o.part OR i.off <> o.off",
    "input": "SELECT count(*) FROM input",
    "input_distinct": "SELECT count(DISTINCT value) FROM input",
}


def stop_outside_transaction(proc: Proc) -> None:
    proc.signal(signal.SIGSTOP)
    wait_for(proc.stopped, 10, f"worker {proc.wid} to be stopped", 0.01)


class PostgresSide:
    """PostgreSQL: a kill's transaction is observed in ``pg_stat_activity`` from outside."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._db: psycopg.Connection[Any] | None = None

    def _query(self, sql: str, params: Any = ()) -> list[Any]:
        if self._db is None or self._db.closed:
            self._db = psycopg.connect(self.uri, autocommit=True)
        try:
            cursor = self._db.execute(sql, params)
            return cursor.fetchall() if cursor.description else []
        except psycopg.OperationalError:  # the server restarted: reconnect next time
            self._db.close()
            self._db = None
            raise

    def worker_args(self) -> dict[str, Any]:
        return {
            "database": "postgresql",
            "uri": self.uri,
            "idle_in_transaction_timeout_s": IDLE_IN_TRANSACTION_S,
            "lock_timeout_s": LOCK_TIMEOUT_S,
        }

    def create_out(self) -> None:
        self._query(OUT)
        # the SDK creates its positions table before the workers start: two sinks creating it
        # at once on PostgreSQL fail (CREATE TABLE IF NOT EXISTS races on pg_type)
        postgresql(self.uri).session().close()

    def positions(self, group: str) -> dict[int, tuple[int | None, int]]:
        try:
            rows = self._query(
                "SELECT kafka_partition, next_offset, epoch FROM kafka_sink_positions "
                "WHERE group_id = %s",
                (group,),
            )
        except psycopg.errors.UndefinedTable:
            return {}
        return {int(p): (n, int(e)) for p, n, e in rows}

    def rows_per_value(self, values: list[int]) -> dict[int, int]:
        rows = self._query(
            "SELECT value, count(*) FROM out WHERE value = ANY(%s) GROUP BY value", (values,)
        )
        return {int(v): int(c) for v, c in rows}

    def distinct_values(self) -> int:
        return int(self._query("SELECT count(DISTINCT value) FROM out")[0][0])

    def kill_inside(self, workers: Workers, delay_s: float, timeout: float) -> Kill:
        """SIGKILL a worker whose backend is seen ``idle in transaction`` after its INSERT.

        The handler sleeps ``delay_s`` right after its INSERT into ``out``; ``state_change`` is
        when that INSERT ended, so the transaction commits no earlier than ``state_change +
        delay_s``, whatever the sink runs around the handler.
        """
        sql = (
            "SELECT application_name, state, xact_start IS NOT NULL, "
            "EXTRACT(EPOCH FROM clock_timestamp() - state_change)::float8, "
            "query LIKE 'INSERT INTO out %%' "
            "FROM pg_stat_activity WHERE application_name = ANY(%s)"
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            by_wid = {p.wid: p for p in workers.live.values() if p.name in ("a", "b")}
            sent = time.monotonic()
            for wid, state, in_xact, age, inserted in self._query(sql, (list(by_wid),)):
                if state == "idle in transaction" and in_xact and inserted and age < delay_s / 3:
                    by_wid[wid].signal(signal.SIGKILL)
                    latency = time.monotonic() - sent
                    seen = f"{state} after its INSERT, xact_start set"
                    return Kill(wid, seen, age, latency, age + latency < delay_s)
            time.sleep(0.002)
        raise AssertionError(f"no worker's backend was seen idle in transaction within {timeout}s")

    def after_kill(self, kill: Kill) -> None:
        wait_for(
            lambda: (
                not self._query(
                    "SELECT 1 FROM pg_stat_activity WHERE application_name = %s", (kill.wid,)
                )
            ),
            30,
            f"the backend of the killed worker {kill.wid} to end (its transaction with it)",
            0.05,
        )

    def freeze(self, proc: Proc) -> str:
        """SIGSTOP ``proc`` while holding the positions table locked, seen idle from outside.

        Once the EXCLUSIVE lock is granted, no transaction that advanced a position is open,
        and none can advance one until it is released.
        """
        with psycopg.connect(self.uri) as db:
            db.execute("SET lock_timeout = '30s'")
            db.execute("LOCK TABLE kafka_sink_positions IN EXCLUSIVE MODE")
            rows = db.execute(
                "SELECT state, xact_start IS NOT NULL FROM pg_stat_activity "
                "WHERE application_name = %s",
                (proc.wid,),
            ).fetchall()
            assert rows and all(state == "idle" and not x for state, x in rows), (
                f"the zombie-to-be {proc.wid} should be idle, outside a transaction: {rows}"
            )
            stop_outside_transaction(proc)
            db.rollback()
        return f"backend {rows[0][0]}, xact_start null, positions table locked while stopping"

    def load_and_count(self, inputs: list[tuple[int, int, int]]) -> dict[str, int]:
        with psycopg.connect(self.uri) as db:
            db.execute(INPUT)
            with db.cursor().copy("COPY input (part, off, value) FROM STDIN") as copy:
                for row in inputs:
                    copy.write_row(row)
            db.commit()
            return {k: int(db.execute(q).fetchone()[0]) for k, q in COUNTS.items()}  # type: ignore[index]

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


class SqliteSide:
    """SQLite: a kill's transaction is shown by the handler's marker file and its sleep."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @contextlib.contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
        try:
            yield db
        finally:
            db.close()

    def worker_args(self) -> dict[str, Any]:
        return {"database": "sqlite", "path": str(self.path), "mark": True}

    def create_out(self) -> None:
        with self._db() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(OUT)

    def positions(self, group: str) -> dict[int, tuple[int | None, int]]:
        with self._db() as db:
            try:
                rows = db.execute(
                    "SELECT kafka_partition, next_offset, epoch FROM kafka_sink_positions "
                    "WHERE group_id = ?",
                    (group,),
                ).fetchall()
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):
                    return {}
                raise
        return {int(p): (n, int(e)) for p, n, e in rows}

    def rows_per_value(self, values: list[int]) -> dict[int, int]:
        marks = ",".join("?" * len(values))
        with self._db() as db:
            rows = db.execute(
                f"SELECT value, count(*) FROM out WHERE value IN ({marks}) GROUP BY value",
                values,
            ).fetchall()
        return {int(v): int(c) for v, c in rows}

    def distinct_values(self) -> int:
        with self._db() as db:
            return int(db.execute("SELECT count(DISTINCT value) FROM out").fetchone()[0])

    def kill_inside(self, workers: Workers, delay_s: float, timeout: float) -> Kill:
        """SIGKILL a worker whose handler marked, after its INSERT, that it starts its sleep.

        The handler runs after ``BEGIN IMMEDIATE`` and the positions' UPDATE; the transaction
        commits after the handler returns, no earlier than ``marker time + delay_s``.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for proc in list(workers.live.values()):
                if proc.name not in ("a", "b"):
                    continue
                try:
                    mark = json.loads((proc.control / f"txn-{proc.wid}").read_text())
                except (OSError, ValueError):
                    continue
                age = time.time() - float(mark["time"])
                if mark["pid"] == proc.pid and age < delay_s / 3:
                    proc.signal(signal.SIGKILL)
                    since = time.time() - float(mark["time"])
                    return Kill(proc.wid, "handler marker", age, since - age, since < delay_s)
            time.sleep(0.002)
        raise AssertionError(f"no worker's handler was seen mid-transaction within {timeout}s")

    def after_kill(self, kill: Kill) -> None:
        return  # the kernel released the dead process's locks with its file descriptors

    def freeze(self, proc: Proc) -> str:
        """SIGSTOP ``proc`` while this connection holds the database's write lock."""
        db = sqlite3.connect(self.path, timeout=0, isolation_level=None)
        try:
            # granted: no worker is inside a write transaction. Asked every 0.5 ms: SQLite's
            # own busy wait looks every 100 ms and misses the workers' short gaps.
            deadline = time.monotonic() + 30
            while True:
                try:
                    db.execute("BEGIN IMMEDIATE")
                    break
                except sqlite3.OperationalError as exc:
                    if "locked" not in str(exc) or time.monotonic() > deadline:
                        raise
                    time.sleep(0.0005)
            stop_outside_transaction(proc)
            db.execute("ROLLBACK")
        finally:
            db.close()
        return "write lock held (BEGIN IMMEDIATE) while stopping"

    def load_and_count(self, inputs: list[tuple[int, int, int]]) -> dict[str, int]:
        with self._db() as db:
            db.execute(INPUT)
            db.execute("BEGIN")
            db.executemany("INSERT INTO input (part, off, value) VALUES (?, ?, ?)", inputs)
            db.execute("COMMIT")
            # indexes after the run (out keeps no constraint while the sink writes)
            db.execute("CREATE INDEX out_value ON out (value)")
            db.execute("CREATE INDEX input_value ON input (value)")
            return {k: int(db.execute(q).fetchone()[0]) for k, q in COUNTS.items()}

    def close(self) -> None:
        return
