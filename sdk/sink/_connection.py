"""The sink's one database session: opened on demand, retried with backoff, its bound watched.

A transient database error (connection lost or refused, a lock wait that ran out, a session
the server ended) drops the session; the next use opens a new one. Errors are retried for up
to ``retry_timeout_s`` from the first of a streak; a committed batch ends the streak.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from typing import Any

from sdk.errors import DatabaseError, DatabaseUnavailableError
from sdk.sink._database import Database, Holder, Session
from sdk.sink._records import SinkStats

__all__ = ["SinkConnection", "application_name"]

_log = logging.getLogger("sdk.sink")


def application_name(group: str) -> str:
    """How a sink's sessions name themselves: ``ksem-sink GROUP HOST:PID``.

    An operator (and a member waiting for their locks) finds a frozen process by it; at most
    63 bytes (PostgreSQL's NAMEDATALEN), the group shortened first.
    """
    process = f" {socket.gethostname()}:{os.getpid()}"
    return f"ksem-sink {group}"[: max(10, 63 - len(process))] + process


class SinkConnection:
    """The session of one sink, and what its failures cost.

    Args:
        database: Where the session comes from.
        stats: The sink's counters.
        retry_timeout_s: How long a streak of transient errors is retried.
        name: The sessions' ``application_name``.
    """

    def __init__(
        self, database: Database, stats: SinkStats, retry_timeout_s: float, name: str
    ) -> None:
        self.database = database
        self.stats = stats
        self.name = name
        self._retry_timeout = retry_timeout_s
        self._session: Session | None = None
        self._failing_since: float | None = None
        self._streak = 0  # transient errors since the last committed batch: the backoff
        self._began: float | None = None  # when the batch transaction in hand began
        self._warned_at = -60.0  # the latest "a transaction took half its bound" warning
        self.stale = False  # a transaction failed transiently: re-read the positions first

    def session(self) -> Session:
        """The open session, or a new one.

        Raises:
            DatabaseUnavailableError: The database refused the connection.
            DatabaseError: The positions table is not the sink's, or another error.
        """
        if self._session is None:
            self._session = self.database.session(self.name)
        return self._session

    def close(self) -> None:
        """Close the session (nothing is left to commit)."""
        session, self._session = self._session, None
        if session is not None:
            session.close()

    def begin(self) -> Session:
        """The session, its batch transaction begun (the bound's clock starts).

        Raises:
            DatabaseUnavailableError: Transient.
            DatabaseError: Otherwise.
        """
        session = self.session()
        self._began = time.monotonic()
        session.begin()
        return session

    def committed(self) -> None:
        """The batch committed: the streak of errors ends; warn when it took half the bound.

        At most once a minute: the next longer transaction would be ended by the server.
        """
        self._failing_since = None
        self._streak = 0
        began, self._began = self._began, None
        bound = self.database.transaction_timeout_s
        if bound is None or began is None:
            return
        seconds = time.monotonic() - began
        now = time.monotonic()
        if seconds >= bound / 2 and now - self._warned_at >= 60.0:
            self._warned_at = now
            _log.warning(
                "a batch transaction took %.1fs, over half of the database's "
                "transaction_timeout_s (%gs), past which the server ends it; raise "
                "transaction_timeout_s above the longest batch, or lower batch_size",
                seconds,
                bound,
            )

    def failed(self, error: DatabaseUnavailableError) -> None:
        """The batch transaction failed transiently: roll back, drop the session, back off.

        Raises:
            DatabaseUnavailableError: The errors have lasted ``retry_timeout_s``.
        """
        self._transient(error, self._over_bound())

    def retrying(self, call: Callable[[Session], Any], closed: Callable[[], bool]) -> Any:
        """``call(session)``, retried on transient errors for up to ``retry_timeout_s``.

        A lock wait that ran out is retried at once (the server waited already), and the
        sessions holding the locks are named in the log and in ``stats.blocked_by``.

        Raises:
            DatabaseUnavailableError: The errors have lasted ``retry_timeout_s``, or the sink
                was closed meanwhile.
            DatabaseError: Not transient.
        """
        while True:
            try:
                return call(self.session())
            except DatabaseUnavailableError as exc:
                waited = self.database.dialect.is_lock_wait(exc.__cause__ or exc)
                self._transient(exc, self._blocked() if waited else "", waited=waited)
                if closed():
                    raise

    def _over_bound(self) -> str:
        """Why the batch's transaction failed, when it ran past the database's bound."""
        bound = self.database.transaction_timeout_s
        began, self._began = self._began, None
        if bound is None or began is None or time.monotonic() - began < bound:
            return ""
        return (
            f" (the batch transaction ran {time.monotonic() - began:.1f}s, past the database's "
            f"transaction_timeout_s of {bound:g}s: the server ended it; if the process was not "
            "frozen, raise transaction_timeout_s above the longest batch or lower batch_size)"
        )

    def _blocked(self) -> str:
        """A lock wait ran out: name the sessions holding the positions rows' locks.

        With ``end_frozen_holders``, end those of this group open past the bound.
        """
        self.stats.lock_waits += 1
        holders: list[Holder] = []
        session = self._session
        if session is not None:
            holders = session.holders()
        self.stats.blocked_by = "; ".join(str(h) for h in holders[:3])
        if not holders:
            return ""
        why = f"; the positions rows are locked by {self.stats.blocked_by}"
        bound = self.database.transaction_timeout_s
        if session is None or bound is None or not self.database.end_frozen_holders:
            return why
        ours = self.name.rsplit(" ", 1)[0] + " "  # "ksem-sink GROUP ": the same group
        for holder in holders:
            if holder.application_name.startswith(ours) and holder.seconds > bound:
                try:
                    ended = session.terminate(holder.pid)
                except DatabaseError as exc:
                    _log.warning("end_frozen_holders: could not end %s: %s", holder, exc)
                    continue
                if ended:
                    self.stats.holders_ended += 1
                    _log.warning(
                        "ended %s: its transaction was open past transaction_timeout_s (%gs)",
                        holder,
                        bound,
                    )
        return why

    def _transient(
        self, error: DatabaseUnavailableError, why: str, *, waited: bool = False
    ) -> None:
        session, self._session = self._session, None
        if session is not None:
            session.rollback()
            session.close()
        self.stale = True
        self.stats.database_retries += 1
        self.stats.note(str(error))
        _log.warning("database: %s%s; retrying", error, why)
        now = time.monotonic()
        if self._failing_since is None:
            self._failing_since = now
        elif now - self._failing_since > self._retry_timeout:
            raise error
        if waited:
            return
        self._streak += 1
        time.sleep(min(5.0, 0.05 * 2 ** min(self._streak, 7)))
