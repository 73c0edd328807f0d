"""The soak mode, short: a steady rate through two exactly_once processors, then the report.

The full soak is ``./dev.sh reliability --soak-seconds S``; this proves the measurement itself
(every record arrives once, every window is reported, the table and the plot are produced)
without timing assertions.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sdk.testing.pytest_plugin import require_local
from tests.reliability import run
from tests.reliability._soak import run_soak

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_short_soak_reports_every_window(kafka_cluster3: Any, tmp_path: Path) -> None:
    cluster = require_local(kafka_cluster3)
    soak = run_soak(cluster, "exactly_once", 15.0, 400.0, tmp_path, warmup=5.0)
    print({k: v for k, v in soak.items() if k != "rows"}, soak["rows"])

    records = int((5.0 + 15.0) * 400.0)
    assert soak["sent"] == records
    assert soak["distinct_read"] == records  # nothing lost
    assert soak["read"] == records  # nothing duplicated (read_committed, exactly_once)
    assert [r["t"] for r in soak["rows"]] == [0, 5, 10]
    for row in soak["rows"]:
        assert row["records_per_s"] > 0
        assert 0 < row["p50_ms"] <= row["p99_ms"]

    soaks = {"exactly_once": {"rate": 400, "seconds": 15.0, "warmup": 5.0, **soak}}
    block = run._soak_block(soaks)
    assert block.startswith("exactly_once, 400 records/s offered for 15 s after a 5 s warm-up")
    assert block.count("\n| ") == 2 + len(soak["rows"])  # header, rule, one line per window
    png = tmp_path / "soak.png"
    assert run._plot(soaks, png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
