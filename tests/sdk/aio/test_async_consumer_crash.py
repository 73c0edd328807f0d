"""AsyncConsumer in a worker process SIGKILLed mid-handling and restarted, counted in a ledger.

The sync consumer's crash scenario (tests/sdk/consumer/test_crash.py) with an ``async def``
handler run by ``AsyncConsumer.run``: at_most_once never handles a record twice, at_least_once
never loses one. The ledger (SQLite, written by the handler) counts, not the SDK.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.sdk.consumer._crash import PARTS, check, crash_run

pytestmark = [pytest.mark.broker, pytest.mark.slow]


@pytest.mark.parametrize(
    ("guarantee", "front"),
    [
        ("at_most_once", "async"),
        ("at_least_once", "async"),
        # bytes in: at_least_once polls, handles and stores on the loop's thread
        ("at_least_once", "async-bytes"),
    ],
)
def test_async_consumer_survives_sigkills(
    guarantee: str,
    front: str,
    kafka_cluster: Any,
    make_topic: Any,
    make_group: Any,
    tmp_path: Path,
) -> None:
    bs = kafka_cluster.bootstrap_servers
    topic, group = make_topic(PARTS), make_group()
    started = time.monotonic()
    counts, kills, offsets, block_at = crash_run(bs, topic, group, guarantee, tmp_path, front=front)
    check(guarantee, counts, kills, sum(offsets), block_at, started)
