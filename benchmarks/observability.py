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
  that drops spans, ``InMemoryMetricReader``), what an application with tracing pays.

Medians of ``--runs`` runs, rows rotated, one warm-up pass. Usage::

    .venv/bin/python benchmarks/observability.py [-n 50000] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
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


def sdk_telemetry() -> Telemetry:
    """Telemetry on an installed opentelemetry-sdk that batches spans to a dropping exporter."""
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

    tp = TracerProvider()
    tp.add_span_processor(BatchSpanProcessor(Drop(), max_queue_size=100_000))
    mp = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return Telemetry(tracer_provider=tp, meter_provider=mp)


def records(n: int, traced: bool) -> list[tuple[Any, ...]]:
    """Input records as (topic, partition, offset, key, value, headers)."""
    headers = [("traceparent", TRACEPARENT)] if traced else None
    return [("in", i % 4, i, f"k{i % 1000}".encode(), b"x" * 100, headers) for i in range(n)]


def main() -> None:
    """Run the rows and print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=50_000, help="records per run")
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    traced, untraced = records(args.n, True), records(args.n, False)
    rows: list[tuple[str, Callable[[Any, Sequence[tuple[Any, ...]]], None], list[Any]]] = [
        ("bare (no instrumentation)", bare, traced),
        ("no-op, traced input", hooked(Telemetry()), traced),
        ("no-op, untraced input", hooked(Telemetry()), untraced),
        ("SDK, traced input", hooked(sdk_telemetry()), traced),
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
