"""Producer → Processor → verifier for each guarantee on the 3-node cluster, under faults.

Faults per run (see tests/reliability/_faults.py): SIGKILL of a partition leader, a clean bounce
of every broker, SIGKILL + restart of a processor, a zombie processor (SIGSTOP longer than the
transaction and session timeouts, then SIGCONT) and, for exactly_once, the transaction
coordinator SIGKILLed while a commit is in flight. ``RELIABILITY_RECORDS`` overrides N.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from sdk.testing.pytest_plugin import require_local
from tests.reliability._pipeline import run_pipeline

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

N = int(os.environ.get("RELIABILITY_RECORDS", "100000"))


@pytest.mark.parametrize("guarantee", ["exactly_once", "at_least_once", "at_most_once"])
def test_pipeline_under_faults(kafka_cluster3: Any, tmp_path: Path, guarantee: str) -> None:
    cluster = require_local(kafka_cluster3)
    result = run_pipeline(cluster, guarantee, N, tmp_path)
    print(result.as_dict())
    expected_faults = 5 if guarantee == "exactly_once" else 4
    assert len(result.faults) == expected_faults
    assert len(result.notes) == expected_faults  # every fault actually ran
    if guarantee == "exactly_once":
        assert (result.lost, result.duplicated, result.out_of_order) == (0, 0, 0)
        assert result.output == N
    elif guarantee == "at_least_once":
        assert result.lost == 0
    else:
        assert result.duplicated == 0
