"""Producer → processors → verifier under faults, on a 3-node ``LocalCluster``.

``run_pipeline`` writes ``records`` numbered records with an SDK ``Producer`` under the guarantee
(:mod:`tests.reliability._source`), copies them with two ``Processor`` worker processes under the
same guarantee (:mod:`tests.reliability.worker`) while :mod:`tests.reliability._faults` injects
the faults one phase at a time, then reads the output read_committed and counts lost, duplicated
and out-of-order (per key) records.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from sdk.profiles import Guarantee
from sdk.profiles._common import parse_guarantee
from sdk.testing.admin import create_topic
from sdk.testing.cluster import LocalCluster
from tests.reliability._faults import FAULTS, FaultContext
from tests.reliability._source import SourceStage
from tests.sdk.processor._support import verify, wait_for

PARTITIONS = 4
TRANSACTION_TIMEOUT_MS = 10_000
SESSION_TIMEOUT_MS = 6_000
STALL_SECONDS = 45.0
COUNTERS = (
    "commits",
    "aborts",
    "fenced",
    "transaction_timeouts",
    "producer_recreations",
    "ambiguous",
    "lost",
    "rewinds",
    "commit_refused",
    "redelivered",
    "stalled_calls",
)


@dataclass
class PipelineResult:
    """One pipeline run, as reported in docs/reliability.md."""

    guarantee: str
    records: int
    faults: list[str]
    source_acked: int
    source_failed: int
    source_retried_chunks: int
    output: int
    lost: int
    duplicated: int
    out_of_order: int
    wall_seconds: float
    notes: dict[str, str] = field(default_factory=dict)
    processors: dict[str, int] = field(default_factory=dict)
    watchdog_restarts: int = 0
    processor_crashes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready copy."""
        return asdict(self)


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offset per partition (-1 if none), read without joining."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        asked = [TopicPartition(topic, p) for p in range(partitions)]
        for _ in range(30):
            try:
                return {tp.partition: tp.offset for tp in consumer.committed(asked, timeout=10)}
            except KafkaException:  # coordinator moving or loading
                time.sleep(0.5)
        raise AssertionError(f"no committed offsets for {group}")
    finally:
        consumer.close()


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    """End offset of each partition (non-transactional topics: offset after the last record)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()


def faults_for(guarantee: Guarantee, wanted: Sequence[str] | None) -> list[str]:
    """The fault sequence: every default fault (coordinator ones only with transactions)."""
    extra = ("cluster_stall", "fenced_zombie")  # for the accounting test, not the default run
    names = list(wanted) if wanted is not None else [n for n in FAULTS if n not in extra]
    unknown = [n for n in names if n not in FAULTS]
    if unknown:
        raise ValueError(f"unknown faults {unknown}; valid: {', '.join(FAULTS)}")
    if guarantee is not Guarantee.EXACTLY_ONCE:
        names = [n for n in names if n not in ("coordinator_kill", *extra)]
    return names


def run_pipeline(
    cluster: LocalCluster,
    guarantee: str | Guarantee,
    records: int,
    tmp: Path,
    *,
    faults: Sequence[str] | None = None,
    rate: float = 10_000.0,
    log: Callable[[str], None] = print,
    worker_extra: Mapping[str, Any] | None = None,
) -> PipelineResult:
    """Run the pipeline once and return the verdict (see the module docstring)."""
    g = parse_guarantee(guarantee)
    names = faults_for(g, faults)
    bs = cluster.bootstrap_servers
    tag = f"rel-{g.value.replace('_', '')}-{uuid.uuid4().hex[:8]}"
    src = create_topic(bs, f"{tag}-in", PARTITIONS, replication_factor=3)
    dst = create_topic(bs, f"{tag}-out", PARTITIONS, replication_factor=3)
    group = f"{tag}-g"
    worker_args = {
        "bootstrap": bs,
        "group": group,
        "input": src,
        "output": dst,
        "guarantee": g.value,
        "txn_prefix": f"{tag}-",
        "transaction_timeout_ms": TRANSACTION_TIMEOUT_MS,
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "commit_interval_ms": 100,
        "batch_size": 500,
        **(worker_extra or {}),  # e.g. transaction_call_timeout_ms
    }
    stop_s = max(TRANSACTION_TIMEOUT_MS, SESSION_TIMEOUT_MS) / 1000 + 5
    eos = g is Guarantee.EXACTLY_ONCE
    ctx = FaultContext(cluster, src, dst, tmp, worker_args, eos, stop_s, log)
    source = SourceStage(bs, src, g, records, rate=rate, log=log)
    share = records // (len(names) + 1)
    ctx.more = lambda: source.allow(source._allowance + 500)
    started = time.monotonic()
    log(f"[{g.value}] {records:,} records, faults {names}, {src} -> {dst}")

    watch = {"value": -1, "since": time.monotonic(), "restarts": 0}

    def committed() -> int:
        value = sum(max(o, 0) for o in committed_offsets(bs, group, src, PARTITIONS).values())
        now = time.monotonic()
        if value != watch["value"]:
            watch.update(value=value, since=now)
        elif now - watch["since"] > STALL_SECONDS and source.offsets_total() > value:
            # Liveness probe (what a supervisor such as Kubernetes does): a processor blocked
            # in librdkafka (send_offsets_to_transaction ignoring its timeout after a group
            # coordinator move, librdkafka #5456/#5511) holds its partitions forever.
            log(f"[{g.value}] no progress for {STALL_SECONDS}s: restarting the processors")
            for name in list(ctx.workers):
                log(f"[{g.value}] stacks of {name}:\n{ctx.workers[name].stacks()}")
                ctx.start(name)
            watch.update(since=now, restarts=watch["restarts"] + 1)
        return value

    def check_alive() -> None:
        if source.error is not None:
            raise AssertionError(f"source stage failed: {source.error!r}")
        for name, w in list(ctx.workers.items()):
            if w.proc.poll() is not None:  # crashed on its own: restart it, as a supervisor would
                lines = [x for x in w.log_path.read_text(errors="replace").splitlines() if x]
                error = next((x for x in reversed(lines) if "Error" in x), "?")
                ctx.crashes.append(str(error))
                log(f"[{g.value}] processor {name} exited {w.proc.returncode}: {error}")
                ctx.start(name)

    try:
        ctx.start("a")
        ctx.start("b")
        source.start()
        for k, name in enumerate(names):
            source.allow((k + 1) * share)
            if name == "leader_kill":  # while the source is writing
                target = k * share + share // 4
                wait_for(lambda t=target: (check_alive(), source.acked >= t)[1], 300, "source")
            else:  # while the processors work on the new share
                base = committed()
                target = base + share // 4
                # a long fault before (a stalled coordinator) lets the processors catch up with
                # the allowance: release enough input for the progress this wait expects
                source.allow(target + share // 4)
                wait_for(lambda t=target: (check_alive(), committed() >= t)[1], 300, "progress")
            t0 = time.monotonic()
            log(f"[{g.value}] fault {name} at source {source.acked:,}, input {committed():,}")
            FAULTS[name](ctx)
            log(f"[{g.value}] fault {name} done in {time.monotonic() - t0:.1f}s")
        source.allow(records)
        source.join(max(300.0, records / 1000))
        check_alive()
        if g is Guarantee.AT_MOST_ONCE:  # acks=0 reports no offsets: use the end offsets
            source.next_offsets = high_watermarks(bs, src, PARTITIONS)

        def drained() -> bool:
            check_alive()
            committed()  # the liveness probe
            now = committed_offsets(bs, group, src, PARTITIONS)
            return all(now.get(p, -1) >= o for p, o in source.next_offsets.items())

        wait_for(drained, max(300.0, records / 500), "all input committed", every=1.0)
    finally:
        for w in [*ctx.workers.values(), *ctx.retired]:
            w.shutdown()
    totals = {c: 0 for c in COUNTERS}
    for w in [*ctx.workers.values(), *ctx.retired]:
        stats = w.stats()
        for c in COUNTERS:
            totals[c] += int(stats.get(c, 0) or 0)
    verdict = verify(bs, dst, PARTITIONS, records, timeout=max(120.0, records / 2000))
    result = PipelineResult(
        guarantee=g.value,
        records=records,
        faults=names,
        source_acked=source.acked,
        source_failed=source.failed,
        source_retried_chunks=source.retried_chunks,
        output=verdict.count,
        lost=verdict.missing,
        duplicated=verdict.duplicates,
        out_of_order=verdict.order_violations,
        wall_seconds=round(time.monotonic() - started, 1),
        notes=ctx.notes,
        processors=totals,
        watchdog_restarts=int(watch["restarts"]),
        processor_crashes=ctx.crashes,
    )
    log(f"[{g.value}] {result.as_dict()}")
    return result
