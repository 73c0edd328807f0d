"""AsyncProcessor on a real broker: exactly-once copy with an async handler; cancellation.

The output is read by a raw confluent-kafka read_committed reader, not by the SDK.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import Producer

from sdk.aio import AsyncProcessor
from sdk.consumer import ConsumerRecord
from sdk.processor import OutputRecord
from sdk.profiles import ProcessingProfile
from tests.sdk.aio._support import read_all
from tests.sdk.consumer._support import seed

pytestmark = pytest.mark.broker


def _profile(bs: str, group: str) -> ProcessingProfile:
    side = {"guarantee": "exactly_once", "bootstrap_servers": bs}
    return ProcessingProfile(
        guarantee="exactly_once",
        consumer={**side, "group_id": group, "session_timeout_ms": 6_000},
        producer={**side, "transactional_id_prefix": f"{group}-"},
        commit_interval_ms=100,
    )


def test_a_cancelled_run_aborts_its_transaction_and_the_next_run_completes_the_copy(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    """Cancelled while the handler of record 1,500 waits (a transaction open): readers are
    not held back (a record written after the cancel is read_committed at once), and a
    second run with the same instance id completes the copy: 0 lost, 0 duplicated."""
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(1), make_topic(1), make_group()
    seed(bs, src, 3_000)
    waiting = asyncio.Event()
    handled: list[int] = []

    async def stuck_at_1500(record: ConsumerRecord) -> list[OutputRecord]:
        if int(record.value) == 1_500:
            waiting.set()
            await asyncio.sleep(3600)  # cancelled here, mid-transaction
        await asyncio.sleep(0)
        return [OutputRecord(dst, record.value, record.key)]

    async def copy(record: ConsumerRecord) -> list[OutputRecord]:
        handled.append(int(record.value))
        if int(record.value) == 2_999:
            proc.stop()
        return [OutputRecord(dst, record.value, record.key)]

    async def first_run() -> None:
        first = AsyncProcessor(_profile(bs, group), [src], instance_id="i0")
        task = asyncio.create_task(first.run(stuck_at_1500))
        await asyncio.wait_for(waiting.wait(), 60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert first.stats.aborts >= 1  # the open transaction was aborted, not left open

    asyncio.run(first_run())
    marker = Producer({"bootstrap.servers": bs})
    marker.produce(dst, b"marker")
    assert marker.flush(10) == 0
    began = time.monotonic()
    after_cancel = read_all(bs, dst, 1)
    assert b"marker" in after_cancel  # read_committed: no open transaction holds it back
    assert time.monotonic() - began < 15
    committed_first = [int(v) for v in after_cancel if v != b"marker"]
    assert committed_first == list(range(len(committed_first)))  # a committed prefix only
    assert len(committed_first) < 1_500

    proc = AsyncProcessor(_profile(bs, group), [src], instance_id="i0")
    asyncio.run(proc.run(copy, max_duration_s=120))
    out = Counter(int(v) for v in read_all(bs, dst, 1) if v != b"marker")
    assert sorted(out) == list(range(3_000))  # nothing lost
    assert max(out.values()) == 1  # nothing duplicated
    assert handled[0] == len(committed_first)  # the second run started where the first committed


def test_failure_policy_per_record_when_a_batch_crosses_to_the_loop_at_once(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    """Handlers of a polled batch run in one crossing, yet the failure policy stays per record:
    record 50 fails twice and is retried (later records wait for it), record 120 always fails
    and is dead-lettered; every other record is copied once, in order."""
    bs = kafka_cluster.bootstrap_servers
    src, dst, dlq, group = make_topic(1), make_topic(1), make_topic(1), make_group()
    seed(bs, src, 300)
    calls: list[int] = []
    failures = {50: 2}

    async def flaky(record: ConsumerRecord) -> list[OutputRecord]:
        value = int(record.value)
        calls.append(value)
        if value == 120 or failures.get(value, 0) > 0:
            failures[value] = failures.get(value, 0) - 1
            raise RuntimeError(f"record {value} failed")
        if value == 299:
            proc.stop()
        return [OutputRecord(dst, record.value, record.key)]

    profile = _profile(bs, group)
    profile = profile.model_copy(
        update={
            "consumer": profile.consumer.model_copy(
                update={
                    "failure": profile.consumer.failure.model_copy(
                        update={
                            "attempts": 3,
                            "backoff_initial_ms": 1,
                            "on_failure": "dlq",
                            "dlq_topic": dlq,
                        }
                    )
                }
            )
        }
    )
    proc = AsyncProcessor(profile, [src], instance_id="f0")
    stats = asyncio.run(proc.run(flaky, max_duration_s=120))
    out = [int(v) for v in read_all(bs, dst, 1)]
    assert out == [i for i in range(300) if i != 120]  # each once, in order
    assert [int(v) for v in read_all(bs, dlq, 1)] == [120]
    assert calls.count(50) == 3 and calls.count(120) == 3
    assert calls == sorted(calls)  # no later record's handler ran before a retried one
    assert stats.dead_lettered == 1
