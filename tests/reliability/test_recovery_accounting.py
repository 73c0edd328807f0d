"""Recovery accounting under real faults: each recovery is counted as what it was.

An independent kill test once found ``ambiguous=0`` and ``fenced=0`` in every run although the
workers' logs showed recoveries from AmbiguousTransactionError and ProducerFencedError: the
age of the transaction was checked first, so both were counted as transaction timeouts. Here
every broker is frozen while processor ``a``'s commit is in flight, past the commit's whole
retry budget (``cluster_stall``: an unknown outcome), and later ``a`` is stopped in a
transaction and replaced by a new instance with the same id (``fenced_zombie``: the old one is
fenced when it wakes up). The output stays exact, and the counters say ``ambiguous`` and
``fenced``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sdk.testing.pytest_plugin import require_local
from tests.reliability._pipeline import run_pipeline

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

N = 20_000


def test_ambiguous_and_fenced_recoveries_are_counted_by_kind(
    kafka_cluster3: Any, tmp_path: Path
) -> None:
    cluster = require_local(kafka_cluster3)
    result = run_pipeline(
        cluster,
        "exactly_once",
        N,
        tmp_path,
        faults=["cluster_stall", "fenced_zombie"],
        # a short call timeout spends the commit's retry budget while the coordinator is frozen
        worker_extra={"transaction_call_timeout_ms": 2_000},
    )
    print(result.as_dict())
    assert len(result.notes) == 2  # both faults ran
    assert (result.output, result.lost, result.duplicated, result.out_of_order) == (N, 0, 0, 0)
    counts = result.processors
    assert counts["ambiguous"] >= 1, counts
    assert counts["fenced"] >= 1, counts
    # every ambiguous or fenced recovery made a new producer (the workers use on_fenced="recreate")
    assert counts["producer_recreations"] >= counts["ambiguous"] + counts["fenced"], counts
