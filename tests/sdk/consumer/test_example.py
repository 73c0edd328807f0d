"""The at-least-once log collector example runs to completion (CI smoke test)."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from tests.sdk.consumer._support import ROOT

pytestmark = pytest.mark.broker


def test_log_collector_example_runs(kafka_cluster: Any) -> None:
    env = {
        **os.environ,
        "KAFKA_BOOTSTRAP_SERVERS": kafka_cluster.bootstrap_servers,
        "PYTHONPATH": str(ROOT),
    }
    run = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "log_collector.py"), "--lines", "2000"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "log collector: stored 2000/2000 log lines" in run.stdout
    assert "3 malformed lines dead-lettered" in run.stdout
    assert "log collector: OK" in run.stdout
