"""Crash tests: a consumer process SIGKILLed mid-handling and restarted, counted in a ledger.

at_most_once must never handle a record twice (losses are counted); at_least_once must handle
every record at least once (duplicates are counted). The kills are deterministic: the worker's
handler blocks at ledger thresholds drawn from a printed seed (before or after its ledger write)
and is SIGKILLed there; one more kill lands wherever the process happens to be once the ledger
passes a count.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.sdk.consumer._crash import PARTS, check, crash_run

pytestmark = [pytest.mark.broker, pytest.mark.slow]


@pytest.mark.parametrize("guarantee", ["at_most_once", "at_least_once"])
def test_consumer_survives_sigkills(
    guarantee: str, kafka_cluster: Any, make_topic: Any, make_group: Any, tmp_path: Path
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(PARTS), make_group()
    started = time.monotonic()
    counts, kills, offsets, block_at = crash_run(bs, topic, group, guarantee, tmp_path)
    check(guarantee, counts, kills, sum(offsets), block_at, started)
