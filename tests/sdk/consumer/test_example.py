"""The consumer examples run to completion against the session broker (CI smoke tests)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from tests.sdk.consumer._support import ROOT

pytestmark = pytest.mark.broker

# example -> (arguments, lines its output must contain)
EXAMPLES: dict[str, tuple[list[str], list[str]]] = {
    "log_collector.py": (
        ["--lines", "2000"],
        ["log collector: stored 2000/2000 log lines", "3 malformed lines dead-lettered", "OK"],
    ),
    "metrics_reader.py": (["--samples", "1200"], ["0 seen twice", "metrics reader: OK"]),
}


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_example_runs(name: str, kafka_cluster: Any) -> None:
    args, expected = EXAMPLES[name]
    env = {
        **os.environ,
        "KAFKA_BOOTSTRAP_SERVERS": kafka_cluster.bootstrap_servers,
        "PYTHONPATH": str(ROOT),
    }
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / name), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    for line in expected:
        assert line in run.stdout
