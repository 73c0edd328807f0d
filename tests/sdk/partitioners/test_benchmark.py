"""Smoke test: the partitioner benchmark script runs end to end (tiny N; not a timing test)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "benchmarks" / "partitioners.py"


@pytest.mark.broker
def test_benchmark_script_prints_table(kafka_cluster: Any) -> None:
    out = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "--bootstrap",
            kafka_cluster.bootstrap_servers,
            "-n",
            "300",
            "--runs",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    rows = [
        line
        for line in out.splitlines()
        if line.startswith("| ") and "rec/s" not in line and "---" not in line
    ]
    assert [row.split(" | ")[0] for row in rows] == [
        "| raw confluent-kafka",
        "| native murmur2 (SDK)",
        "| python custom (SDK)",
        "| python round_robin (SDK)",
        "| python sticky (SDK)",
    ]
    assert "| raw confluent-kafka |" in out and "| 1.00 |" in out
