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
    throughput, route_cost = out.split("\n\n")[-2:]
    rows = [line.split(" | ")[0] for line in throughput.strip().splitlines()[2:]]
    assert rows == [
        "| raw confluent-kafka",
        "| native murmur2 (SDK)",
        "| python custom (SDK)",
        "| python round_robin (SDK)",
        "| python sticky (SDK)",
    ]
    assert "| raw confluent-kafka |" in throughput and "| 1.00 |" in throughput
    cost_rows = route_cost.strip().splitlines()[2:]
    assert len(cost_rows) == 4
    for row in cost_rows:
        assert int(row.rstrip(" |").rsplit("| ", 1)[1].replace(",", "")) > 0
