"""Benchmark: per-record cost of the Processor's observability hooks, no-op and with an SDK.

Each row runs the per-record work of ``Processor._produce`` for one copied record - build the
produce kwargs, ``Producer.produce()`` into librdkafka's local queue (no broker: the bootstrap
address is unreachable, so the cost is the client call alone), ``poll(0)`` - with or without
the hooks the Processor wraps around it:

* ``bare``: no instrumentation (the peer);
* ``no-op, traced input``: ``Telemetry()`` on the global providers with no SDK installed, the
  input record carries a ``traceparent`` (extract + process span + send span + inject: the
  context is still propagated to the output headers);
* ``no-op, untraced input``: the same, the input has no trace context;
* ``SDK, traced input``: opentelemetry-sdk installed (``BatchSpanProcessor`` to an exporter
  that drops spans, ``InMemoryMetricReader``), what an application with tracing pays;
* ``SDK, untraced, 1% sampled``: the same with ``ParentBased(TraceIdRatioBased(0.01))`` and
  inputs without trace context (new traces, 99 % of them not recorded);
* ``SDK traces only, traced``: tracer provider only, metrics left no-op.

Medians of ``--runs`` runs, rows rotated, one warm-up pass.

``--processor`` measures end to end instead: an exactly_once ``Processor`` copies ``-n``
traced records between two 4-partition topics of a local 1-node cluster (started from the
``sdk.testing`` jars unless ``--bootstrap`` is given), timed from ``run()`` to every input
offset committed, with no SDK and with the SDK installed. A tree whose Processor takes no
``telemetry`` argument (before the wiring) runs one ``uninstrumented`` row instead. Usage::

    .venv/bin/python benchmarks/observability.py [-n 50000] [--runs 5]
    .venv/bin/python benchmarks/observability.py --processor [-n 20000] [--runs 3]
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import Producer

from sdk.observability import Telemetry

TRACEPARENT = b"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def make_producer() -> Any:
    """A producer whose records never leave the local queue."""
    return Producer(
        {
            "bootstrap.servers": "127.0.0.1:1",  # unreachable: records stay in the local queue
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_000_000,
            "message.timeout.ms": 600_000,
            "log_level": 0,
        }
    )


def bare(producer: Any, records: Sequence[tuple[Any, ...]]) -> None:
    """The uninstrumented per-record work."""
    for _topic, _partition, _offset, key, value, _headers in records:
        kwargs: dict[str, Any] = {"value": value, "key": key}
        producer.produce("out", **kwargs)
        producer.poll(0)


def hooked(tel: Telemetry) -> Callable[[Any, Sequence[tuple[Any, ...]]], None]:
    """The same work inside the Processor's hooks (process span, send span, inject, counts)."""
    tx = tel.start_transaction("bench")

    def run(producer: Any, records: Sequence[tuple[Any, ...]]) -> None:
        for topic, partition, offset, key, value, headers in records:
            with tel.process_span(topic, partition, offset, key, "g", headers, transaction=tx):
                kwargs: dict[str, Any] = {"value": value, "key": key}
                with tel.send_span("out", None, key):
                    out_headers = tel.inject(None)
                    if out_headers:
                        kwargs["headers"] = out_headers
                    producer.produce("out", **kwargs)
                producer.poll(0)
                tx.add()
            tx.add_input()

    return run


def sdk_telemetry(ratio: float = 1.0, with_metrics: bool = True) -> Telemetry:
    """Telemetry on an installed opentelemetry-sdk that batches spans to a dropping exporter.

    Args:
        ratio: Fraction of new traces sampled (``ParentBased(TraceIdRatioBased(ratio))``).
        with_metrics: Install a meter provider too (else metrics stay no-op).
    """
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    class Drop(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

    tp = TracerProvider(sampler=ParentBased(TraceIdRatioBased(ratio)))
    tp.add_span_processor(BatchSpanProcessor(Drop(), max_queue_size=100_000))
    mp = MeterProvider(metric_readers=[InMemoryMetricReader()]) if with_metrics else None
    return Telemetry(tracer_provider=tp, meter_provider=mp)


def records(n: int, traced: bool) -> list[tuple[Any, ...]]:
    """Input records as (topic, partition, offset, key, value, headers)."""
    headers = [("traceparent", TRACEPARENT)] if traced else None
    return [("in", i % 4, i, f"k{i % 1000}".encode(), b"x" * 100, headers) for i in range(n)]


def seed(bootstrap: str, topic: str, n: int) -> None:
    """Write ``n`` records, each with a W3C traceparent header."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(n):
        while True:
            try:
                p.produce(
                    topic,
                    key=f"k{i % 1000}",
                    value=b"x" * 100,
                    headers=[("traceparent", TRACEPARENT)],
                )
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(60) == 0


def committed(bootstrap: str, group: str, topic: str) -> int:
    """Sum of the group's committed offsets over the 4 partitions."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        tps = c.committed([TopicPartition(topic, p) for p in range(4)], timeout=10)
        return sum(max(tp.offset, 0) for tp in tps)
    finally:
        c.close()


def copy_once(bootstrap: str, src: str, n: int, telemetry: Telemetry | None) -> float:
    """Seconds for an exactly_once Processor to copy ``n`` records of ``src`` and commit."""
    from sdk.processor import OutputRecord, Processor
    from sdk.profiles import ProcessingProfile
    from sdk.testing.admin import create_topic

    dst, group = f"obs-out-{uuid.uuid4().hex[:8]}", f"obs-{uuid.uuid4().hex[:8]}"
    create_topic(bootstrap, dst, 4)
    profile = ProcessingProfile(
        guarantee="exactly_once",
        consumer={"guarantee": "exactly_once", "bootstrap_servers": bootstrap, "group_id": group},
        producer={
            "guarantee": "exactly_once",
            "bootstrap_servers": bootstrap,
            "transactional_id_prefix": f"{group}-",
        },
        commit_interval_ms=200,
    )
    extra = {} if telemetry is None else {"telemetry": telemetry}
    proc = Processor(profile, [src], instance_id="bench", **extra)
    start = time.perf_counter()
    t = threading.Thread(
        target=proc.run,
        args=(lambda r: [OutputRecord(dst, r.value, key=r.key, headers=r.headers)],),
    )
    t.start()
    while committed(bootstrap, group, src) < n:
        time.sleep(0.05)
    elapsed = time.perf_counter() - start
    proc.stop()
    t.join(60)
    return elapsed


def processor_main(n: int, runs: int, bootstrap: str | None) -> None:
    """The end-to-end rows on a real broker."""
    from sdk.processor import Processor
    from sdk.testing.admin import create_topic
    from sdk.testing.cluster import LocalCluster

    cluster = None
    if bootstrap is None:
        cluster = LocalCluster(nodes=1).start()
        bootstrap = cluster.bootstrap_servers
    try:
        src = f"obs-in-{uuid.uuid4().hex[:8]}"
        create_topic(bootstrap, src, 4)
        seed(bootstrap, src, n)
        if "telemetry" in inspect.signature(Processor).parameters:
            rows: list[tuple[str, Telemetry | None]] = [
                ("no SDK (default)", Telemetry()),
                ("SDK installed", sdk_telemetry()),
            ]
        else:
            rows = [("uninstrumented", None)]
        times: dict[str, list[float]] = {name: [] for name, _ in rows}
        for run in range(runs + 1):
            for name, tel in rows[run % len(rows) :] + rows[: run % len(rows)]:
                elapsed = copy_once(bootstrap, src, n, tel)
                if run:  # run 0 warms up
                    times[name].append(elapsed)
        print(f"Processor exactly_once copy of {n} records x {runs} runs (median)")
        print(f"{'row':<20} {'seconds':>8} {'records/s':>10} {'us/record':>10}")
        for name, _ in rows:
            sec = statistics.median(times[name])
            print(f"{name:<20} {sec:>8.2f} {n / sec:>10.0f} {sec / n * 1e6:>10.1f}")
    finally:
        if cluster is not None:
            cluster.close()


def main() -> None:
    """Run the rows and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=50_000, help="records per run")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--processor", action="store_true", help="end to end on a real broker")
    ap.add_argument("--bootstrap", help="an existing cluster (with --processor)")
    args = ap.parse_args()
    if args.processor:
        processor_main(args.n, args.runs, args.bootstrap)
        return
    traced, untraced = records(args.n, True), records(args.n, False)
    rows: list[tuple[str, Callable[[Any, Sequence[tuple[Any, ...]]], None], list[Any]]] = [
        ("bare (no instrumentation)", bare, traced),
        ("no-op, traced input", hooked(Telemetry()), traced),
        ("no-op, untraced input", hooked(Telemetry()), untraced),
        ("SDK, traced input", hooked(sdk_telemetry()), traced),
        ("SDK, untraced, 1% sampled", hooked(sdk_telemetry(0.01)), untraced),
        ("SDK traces only, traced", hooked(sdk_telemetry(with_metrics=False)), traced),
    ]
    producer = make_producer()
    timings: dict[str, list[float]] = {name: [] for name, _, _ in rows}
    for run in range(args.runs + 1):
        order = rows[run % len(rows) :] + rows[: run % len(rows)]
        for name, fn, recs in order:
            start = time.perf_counter()
            fn(producer, recs)
            elapsed = time.perf_counter() - start
            producer.purge()
            if run:  # run 0 warms up
                timings[name].append(elapsed / args.n * 1e6)
    base = statistics.median(timings[rows[0][0]])
    print(f"{args.n} records x {args.runs} runs, median microseconds per record")
    print(f"{'row':<28} {'us/record':>10} {'x bare':>8} {'added us':>9}")
    for name, _, _ in rows:
        us = statistics.median(timings[name])
        print(f"{name:<28} {us:>10.2f} {us / base:>8.2f} {us - base:>9.2f}")


if __name__ == "__main__":
    main()
