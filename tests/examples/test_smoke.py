"""Every runnable example runs to completion against the session's broker (CI smoke test)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.broker

# example -> (arguments, lines its output must contain)
EXAMPLES: dict[str, tuple[list[str], list[str]]] = {
    "async_copy.py": (["--records", "10000"], ["async copy: OK"]),
    "async_http_service.py": (["--requests", "1000"], ["http service: OK"]),
    "log_collector.py": (
        ["--lines", "2000"],
        ["log collector: stored 2000/2000 log lines", "3 malformed lines dead-lettered", "OK"],
    ),
    "metrics_reader.py": (["--samples", "1200"], ["0 seen twice", "metrics reader: OK"]),
    "guarantees_demo.py": (["--records", "4000"], ["every guarantee held"]),
    "metrics_emitter.py": (["--seconds", "2"], ["metrics emitter: sent"]),
    "order_service.py": (["--orders", "500"], ["order service: 500 orders in"]),
    "orders_to_postgres.py": (["--orders", "2000"], ["orders to postgres: OK"]),
    "slow_handlers.py": (["--orders", "1000"], ["0 calls out of order", "slow handlers: OK"]),
    "schemas_avro.py": (["--orders", "200"], ["orders decoded: 200, dead-lettered: 1", "OK"]),
    "avro_orders_pipeline.py": (["--orders", "1000"], ["avro pipeline: OK"]),
    "work_queue.py": (["--jobs", "2000", "--workers", "3"], ["work queue: OK"]),
}
# The demo copies its records seven times with three kills each (two of them through a share
# group, waiting out record locks; two into SQLite): about a minute for 4,000 records on 2 cores
# (3 minutes in CI before its workers rejoined at once), the others well under 3
TIMEOUT_S = {"guarantees_demo.py": 540}
# the demo's database rows: row -> (lost, duplicated) it must show; None: any count
DEMO_ROWS: dict[str, tuple[int, int | None]] = {
    "exactly_once → SQLite": (0, 0),
    "at_least_once → SQLite": (0, None),
}
# examples that need a schema registry (the session's, sdk.testing.registry)
REGISTRY = {"schemas_avro.py", "avro_orders_pipeline.py"}
# Run as `./dev.sh demo` does, on their own embedded cluster: it stops before the process exits,
# so a client left open shows up as librdkafka FAIL lines (an external cluster would hide it).
EMBEDDED = {"guarantees_demo.py"}


def _demo_row(stdout: str, label: str) -> tuple[int, int]:
    """(lost, duplicated) of one row of the demo's table."""
    for line in stdout.splitlines():
        if line.startswith(label + " "):
            *_, lost, duplicated = line.split()
            return int(lost.replace(",", "")), int(duplicated.replace(",", ""))
    raise AssertionError(f"no {label!r} row in the demo's table:\n{stdout[-2000:]}")


def _run(cmd: list[str], env: dict[str, str], timeout: float) -> subprocess.CompletedProcess[str]:
    """Run an example in its own process group; on a timeout kill the whole group.

    ``subprocess.run(timeout=...)`` kills only the example: its worker processes and the
    brokers of its embedded cluster lived on (one queue worker of a timed-out demo was still
    reconnecting 1 h 45 min later, taking CPU from the tests after it).
    """
    proc = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=ROOT,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        pytest.fail(
            f"{Path(cmd[1]).name} did not finish within {timeout:g} s (its process group was "
            f"killed)\n{out[-2000:]}{err[-2000:]}"
        )
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow)
        if n == "guarantees_demo.py"
        else pytest.param(n, marks=pytest.mark.registry)
        if n in REGISTRY
        else n
        for n in sorted(EXAMPLES)
    ],
)
def test_example_runs(name: str, request: pytest.FixtureRequest) -> None:
    args, expect = EXAMPLES[name]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    if name in EMBEDDED:
        env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    else:  # the session's broker is started only for the examples that use it
        env["KAFKA_BOOTSTRAP_SERVERS"] = request.getfixturevalue("kafka_cluster").bootstrap_servers
    if name in REGISTRY:
        env["KSEM_SCHEMA_REGISTRY_URL"] = request.getfixturevalue("schema_registry")
    script = str(ROOT / "examples" / name)
    run = _run([sys.executable, script, *args], env, TIMEOUT_S.get(name, 180))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    for line in expect:
        assert line in run.stdout
    if name == "guarantees_demo.py":
        for label, (lost, duplicated) in DEMO_ROWS.items():
            found = _demo_row(run.stdout, label)
            assert found[0] == lost, f"{label}: {found[0]} lost"
            assert duplicated is None or found[1] == duplicated, f"{label}: {found[1]} duplicated"
    if name in EMBEDDED:
        leaked = [
            line
            for line in run.stderr.splitlines()
            if "|FAIL|" in line or "Connection refused" in line
        ]
        assert not leaked, "a client outlived the cluster:\n" + "\n".join(leaked)


@pytest.mark.spark
@pytest.mark.slow
def test_spark_job_example_runs() -> None:
    """The Spark example starts its own embedded cluster (fixed topic names)."""
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_BOOTSTRAP_SERVERS"}
    env["PYTHONPATH"] = str(ROOT)
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "spark_job.py")],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "read_committed output: 25000 records (expected 25000)" in run.stdout
