"""AsyncProcessor in worker processes: SIGKILLs, rebalances and a zombie.

The same scenarios as the sync Processor's (tests/sdk/processor/test_crash_copy.py), each worker
running ``AsyncProcessor`` with an async handler. Counted by a raw confluent-kafka
read_committed reader and by Kafka's Java console consumer, not by the SDK.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sdk.testing.pytest_plugin import require_local
from tests.sdk.processor._support import PARTS, N, crash_run, zombie_run

pytestmark = [pytest.mark.broker, pytest.mark.slow]


def test_async_exactly_once_copy_survives_kills_and_rebalances(
    kafka_cluster: Any, make_topic: Any, make_group: Any, tmp_path: Path
) -> None:
    """100,000 records, 3 SIGKILLs, a member joining and one leaving: 0 lost, 0 duplicated."""
    cluster = require_local(kafka_cluster)
    bs = cluster.bootstrap_servers
    src, dst, group = make_topic(PARTS), make_topic(PARTS), make_group()
    out = crash_run(bs, tmp_path, "exactly_once", src, dst, group, front="async")
    v = out["verdict"]
    assert out["kills"] == 3
    assert (v.count, v.duplicates, v.missing, v.order_violations) == (N, 0, 0, 0)
    values = [line for line in cluster.console_read_committed(dst) if line.isdigit()]
    print(f"[exactly_once async] Java ConsoleConsumer (read_committed) count={len(values)}")
    assert len(values) == N
    assert len(set(values)) == N


def test_async_at_least_once_copy_under_the_same_kills(
    kafka_cluster: Any, make_topic: Any, make_group: Any, tmp_path: Path
) -> None:
    """at_least_once (its steps on the loop's thread, as exactly_once): 0 lost under kills."""
    bs = require_local(kafka_cluster).bootstrap_servers
    src, dst, group = make_topic(PARTS), make_topic(PARTS), make_group()
    out = crash_run(bs, tmp_path, "at_least_once", src, dst, group, front="async")
    v = out["verdict"]
    assert out["kills"] == 3
    assert v.missing == 0 and v.distinct == N
    assert v.duplicates > 0  # SIGKILL between flush and the offset store replays records


def test_async_zombie_past_the_transaction_timeout_is_fenced(
    kafka_cluster: Any, make_topic: Any, make_group: Any, tmp_path: Path
) -> None:
    """100,000 records; worker a is SIGSTOPped with a transaction open for 20 s, past its
    session timeout (6 s) and its transaction timeout (8 s); after SIGCONT its transaction is
    aborted, never committed: 0 lost, 0 duplicated."""
    bs = require_local(kafka_cluster).bootstrap_servers
    src, dst, group = make_topic(PARTS), make_topic(PARTS), make_group()
    out = zombie_run(
        bs,
        tmp_path,
        src,
        dst,
        group,
        frozen_s=20,
        n=100_000,
        front="async",
        transaction_timeout_ms=8_000,
    )
    sa, v = out["a"], out["verdict"]
    assert sa["aborts"] >= 1  # a's open transaction was aborted (by a, or by a new epoch)
    assert sa["lost"] >= 1 or sa["fenced"] >= 1 or sa["transaction_timeouts"] >= 1, sa["events"]
    assert (v.count, v.duplicates, v.missing, v.order_violations) == (out["n"], 0, 0, 0)
