"""The per-partition task on a real broker (no Spark): transactional input with aborted
transactions and markers, a re-run that finds nothing to do, and a zombie attempt fenced by a
newer one (init_transactions first, then the committed offset)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from sdk.errors import ProducerFencedError
from sdk.processor import OutputRecord
from spark_integration import BatchJobConfig, plan_ranges, run_range
from tests.spark_integration._support import committed, read_values, seed, verdict

pytestmark = [pytest.mark.broker]

N = 5_000


def _config(bs: str, src: str, group: str) -> BatchJobConfig:
    return BatchJobConfig.exactly_once(
        job_name="copy",
        input_topics=[src],
        bootstrap_servers=bs,
        group_id=group,
        transactional_id_prefix=f"{group}-",
        max_records_per_transaction=1_000,
        consumer={"failure": {"attempts": 1}},
    )


class Copy:
    def __init__(self, topic: str) -> None:
        self.topic = topic

    def __call__(self, records: Iterator[Any]) -> list[OutputRecord]:
        return [OutputRecord(self.topic, r.value, key=r.key) for r in records]


def test_transactional_input_is_copied_exactly_and_a_rerun_does_nothing(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(2), make_topic(2), make_group()
    seed(bs, src, N, transactional=True)  # 10 committed + 10 aborted transactions
    config = _config(bs, src, group)
    ranges = plan_ranges(
        config.processing.consumer, [src], job="copy", transactional_id_prefix=config.prefix
    )
    assert sum(r.size for r in ranges) > N  # aborted records and markers occupy offsets
    results = [run_range(r, config, Copy(dst)) for r in ranges]
    assert sum(r.records_in for r in results) == N
    assert committed(bs, group, src, 2) == [r.end for r in ranges]
    again = plan_ranges(
        config.processing.consumer, [src], job="copy", transactional_id_prefix=config.prefix
    )
    assert [r.size for r in again] == [0, 0]
    v = verdict(read_values(bs, dst), N)
    assert (v.count, v.duplicates, v.missing, v.foreign) == (N, 0, 0, 0)


def test_a_newer_attempt_fences_the_zombie_and_skips_its_committed_work(
    kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bs = kafka_cluster.bootstrap_servers
    src, dst, group = make_topic(1), make_topic(1), make_group()
    seed(bs, src, N)
    config = _config(bs, src, group)
    [rng] = plan_ranges(
        config.processing.consumer, [src], job="copy", transactional_id_prefix=config.prefix
    )
    newer: list[Any] = []

    class ZombieCopy(Copy):
        calls = 0

        def __call__(self, records: Iterator[Any]) -> list[OutputRecord]:
            out = super().__call__(records)
            ZombieCopy.calls += 1
            if ZombieCopy.calls == 3:  # inside the zombie's 2nd transaction (500 per call)
                newer.append(run_range(rng, config, Copy(dst)))  # a newer attempt, to the end
            return out

    # The newer attempt's init_transactions bumps the epoch. librdkafka reports the zombie's next
    # call either as fatal PRODUCER_FENCED (the task raises) or as an abortable epoch error: the
    # task aborts, rewinds to the committed offset - the newer attempt's end - and finds nothing
    # left. Either way the zombie commits nothing after the fence.
    try:
        zombie = run_range(rng, config, ZombieCopy(dst))
    except ProducerFencedError:
        pass
    else:
        print(f"zombie returned after an abortable fence: {zombie}")
        assert zombie.records_in == 1_000 and zombie.aborts >= 1
    [result] = newer
    assert result.start == 1_000  # the zombie's first transaction was committed and skipped
    assert result.records_in == N - 1_000
    v = verdict(read_values(bs, dst), N)
    assert (v.count, v.duplicates, v.missing) == (N, 0, 0)
