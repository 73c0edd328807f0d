"""Benchmark: records/s of native vs Python partitioning against a real local broker.

Rows, all in one run against the same broker, same record shapes:

* ``raw confluent-kafka``: a bare ``Producer.produce(topic, value, key=key)`` (librdkafka's
  default ``consistent_random``), the peer to compare against;
* ``native murmur2 (SDK)``: ``PartitionRouter("murmur2")`` - ``partitioner=murmur2_random`` in
  the config and ``route()`` (returns None) called per record, as the SDK producer does;
* ``python custom (SDK)``: a :class:`~sdk.partitioners.FunctionPartitioner` in pure Python,
  routed per record with ``produce(partition=...)``;
* ``python round_robin (SDK)`` and ``python sticky (SDK)``: the Python-only built-ins.

Two rates per row: the ``produce()`` loop alone (the per-record CPU cost) and end to end up
to ``flush()`` returning (every record acknowledged). Medians over ``--runs`` runs; the order
of the rows rotates between runs, after one discarded warm-up pass. Usage::

    .venv/bin/python benchmarks/partitioners.py            # starts a 1-node local cluster
    .venv/bin/python benchmarks/partitioners.py --bootstrap 127.0.0.1:9092 -n 100000
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
import zlib
from collections.abc import Callable
from typing import Any

from confluent_kafka import Producer

from sdk.partitioners import FunctionPartitioner, PartitionRouter, StickyPartitioner
from sdk.partitioners._python import RoundRobinPartitioner
from sdk.testing.admin import create_topic, delete_topic

Records = list[tuple[bytes, bytes]]


def _custom(key: bytes | None, value: bytes | None, partition_count: int) -> int:
    """A typical user partitioner: route by a key prefix, written in Python."""
    prefix = (key or b"").split(b"-", 1)[0]
    return zlib.crc32(prefix) % partition_count


def _base_config(bootstrap: str) -> dict[str, Any]:
    return {
        "bootstrap.servers": bootstrap,
        "linger.ms": 5,
        "queue.buffering.max.messages": 2_000_000,
        "queue.buffering.max.kbytes": 2_097_151,
    }


def _produce_loop(
    producer: Producer, topic: str, records: Records, route: Callable[..., int | None] | None
) -> None:
    produce = producer.produce
    if route is None:
        for key, value in records:
            produce(topic, value, key=key)
        return
    for key, value in records:
        partition = route(topic, key, value)
        if partition is None:
            produce(topic, value, key=key)
        else:
            produce(topic, value, key=key, partition=partition)


def _run_case(bootstrap: str, partitions: int, case: str, records: Records) -> tuple[float, float]:
    """Produce ``records`` once; return (produce-loop records/s, end-to-end records/s)."""
    topic = create_topic(bootstrap, f"bench-{uuid.uuid4().hex[:10]}", partitions)
    config = _base_config(bootstrap)
    route: Callable[..., int | None] | None = None
    router: PartitionRouter | None = None
    if case != "raw confluent-kafka":
        partitioner: Any = {
            "native murmur2 (SDK)": "murmur2",
            "python custom (SDK)": FunctionPartitioner("prefix_crc", _custom),
            "python round_robin (SDK)": RoundRobinPartitioner(),
            "python sticky (SDK)": StickyPartitioner(),
        }[case]
        router = PartitionRouter(partitioner, config)
        config.update(router.producer_config())
    producer = Producer(config)
    if router is not None:
        router.attach(producer)
        if not router.native:
            router.partition_count(topic)  # warm the cache
        route = router.route
    producer.list_topics(topic, timeout=10)  # every case starts with metadata known
    start = time.perf_counter()
    _produce_loop(producer, topic, records, route)
    loop_done = time.perf_counter()
    remaining = producer.flush(120)
    end = time.perf_counter()
    if remaining:
        raise RuntimeError(f"{case}: {remaining} records not delivered")
    delete_topic(bootstrap, topic)
    n = len(records)
    return n / (loop_done - start), n / (end - start)


CASES = [
    "raw confluent-kafka",
    "native murmur2 (SDK)",
    "python custom (SDK)",
    "python round_robin (SDK)",
    "python sticky (SDK)",
]


def run(bootstrap: str, records: int, runs: int, partitions: int, value_size: int) -> str:
    """Run every case ``runs`` times and return the Markdown table of medians.

    Args:
        bootstrap: The broker.
        records: Records per case and run.
        runs: Runs per case (the median is reported).
        partitions: Partitions of each benchmark topic.
        value_size: Bytes per value.

    Returns:
        The Markdown table.
    """
    data: Records = [
        (f"{i % 97}-user-{i % 10_000}".encode(), b"x" * value_size) for i in range(records)
    ]
    loop: dict[str, list[float]] = {c: [] for c in CASES}
    e2e: dict[str, list[float]] = {c: [] for c in CASES}
    _run_case(bootstrap, partitions, CASES[0], data)  # warm-up (JIT of the broker), discarded
    for r in range(runs):
        order = CASES[r % len(CASES) :] + CASES[: r % len(CASES)]
        for case in order:
            lr, er = _run_case(bootstrap, partitions, case, data)
            loop[case].append(lr)
            e2e[case].append(er)
            print(f"run {r + 1} {case:<26} loop {lr:>10,.0f}/s  end-to-end {er:>10,.0f}/s")
    raw_loop = statistics.median(loop[CASES[0]])
    raw_e2e = statistics.median(e2e[CASES[0]])
    lines = [
        f"{records:,} records x {runs} runs, {value_size}-byte values, {partitions} partitions "
        "(medians)",
        "",
        "| case | produce() loop rec/s | vs raw | end-to-end rec/s | vs raw |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for case in CASES:
        ml, me = statistics.median(loop[case]), statistics.median(e2e[case])
        lines.append(
            f"| {case} | {ml:,.0f} | {ml / raw_loop:.2f} | {me:,.0f} | {me / raw_e2e:.2f} |"
        )
    return "\n".join(lines)


class _StaticMetadata:
    """A metadata client answering "6 partitions" without a broker (for route_cost)."""

    class _Topic:
        def __init__(self, count: int) -> None:
            self.partitions = dict.fromkeys(range(count))
            self.error = None

    class _Cluster:
        def __init__(self, topic: str, count: int) -> None:
            self.topics = {topic: _StaticMetadata._Topic(count)}

    def list_topics(self, topic: str, timeout: float = -1) -> Any:
        return self._Cluster(topic, 6)


def route_cost(calls: int = 300_000) -> str:
    """Return a Markdown table of ``PartitionRouter.route()`` cost per record, no broker.

    Args:
        calls: Calls timed per case.

    Returns:
        The Markdown table (ns per call, best of 3).
    """
    partitioners: dict[str, Any] = {
        "native murmur2 (route returns None)": "murmur2",
        "python custom": FunctionPartitioner("prefix_crc", _custom),
        "python round_robin": RoundRobinPartitioner(),
        "python sticky (null keys)": StickyPartitioner(),
    }
    lines = ["| case | route() ns/record |", "| --- | ---: |"]
    value = b"x" * 100
    for label, partitioner in partitioners.items():
        route = PartitionRouter(partitioner, {}, metadata_client=_StaticMetadata()).route
        key = None if "sticky" in label else b"12-user-5"
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(calls):
                route("t", key, value)
            best = min(best, time.perf_counter() - start)
        lines.append(f"| {label} | {best / calls * 1e9:,.0f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, start a cluster if none was given, print the table.

    Args:
        argv: Command-line arguments (default ``sys.argv[1:]``).

    Returns:
        The exit status.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap", help="existing broker (default: start a local one)")
    parser.add_argument("-n", "--records", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--value-size", type=int, default=100)
    args = parser.parse_args(argv)
    if args.bootstrap:
        table = run(args.bootstrap, args.records, args.runs, args.partitions, args.value_size)
    else:
        from sdk.testing.cluster import LocalCluster

        with LocalCluster(nodes=1) as cluster:
            table = run(
                cluster.bootstrap_servers,
                args.records,
                args.runs,
                args.partitions,
                args.value_size,
            )
    print()
    print(table)
    print()
    print(route_cost())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
