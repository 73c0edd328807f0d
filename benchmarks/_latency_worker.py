"""The processes of one latency case: the paced producer, the reader and the Python pipelines.

``python -m benchmarks._latency_worker ROLE SPEC_JSON``; ROLE is ``producer``, ``reader`` or a
pipeline kind of :data:`PIPELINE_KINDS`. Each runs in its own interpreter, so that no two
share a GIL (a reader waiting for the producer's thread would add its wait to every
latency) and the pipeline's CPU time is its process's alone. A process prints ``READY`` once
it can take records, and the reader one JSON line with its summary at the end.

Each input value starts with :func:`stamp`: the send time (``time.time_ns``) and the record's
index, big-endian, padded to the record size. The pipelines copy the value unchanged.
"""

from __future__ import annotations

import json
import math
import signal
import struct
import sys
import time
from collections.abc import Sequence
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from benchmarks import _harness, _rpw

_HEAD = struct.Struct(">QQ")
KEYS = [b"k%d" % i for i in range(1000)]
"""1,000 distinct keys, as the read-process-write cases' payloads have."""

PIPELINE_KINDS = ("processor-eos", "processor-eos-defaults", "processor-alo", "hand-written")


def stamp(sent_ns: int, index: int, pad: bytes) -> bytes:
    """A value of ``16 + len(pad)`` bytes: the send time in ns and the record's index."""
    return _HEAD.pack(sent_ns, index) + pad


def unstamp(value: bytes) -> tuple[int, int]:
    """(send time in ns, index) of a value made by :func:`stamp`."""
    sent_ns, index = _HEAD.unpack_from(value)
    return sent_ns, index


def quantile(ordered: Sequence[float], q: float) -> float:
    """The nearest-rank ``q`` quantile (0 < q <= 1) of sorted, non-empty ``ordered``.

    The smallest sample with at least ``q`` of the samples at or below it: p99.9 of 1,000
    samples is the largest, never an interpolation between two.
    """
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def summarise(latencies_ms: list[float]) -> dict[str, float | None]:
    """p50, p99, p99.9 and max of latency samples in ms (None when there are none)."""
    ordered = sorted(latencies_ms)
    keys = (("p50_ms", 0.5), ("p99_ms", 0.99), ("p999_ms", 0.999), ("max_ms", 1.0))
    return {key: quantile(ordered, q) if ordered else None for key, q in keys}


def produce(spec: dict[str, Any]) -> int:
    """Write records ``[0, count)`` to ``topic``: ``rate`` per second from ``start_at``.

    Each tick writes the records due by then, all stamped with the tick's clock; the ticks
    are at most a millisecond apart. ``rate`` 0: as fast as possible (a pre-filled topic).
    """
    producer = Producer(
        {
            "bootstrap.servers": spec["bootstrap"],
            "enable.idempotence": True,
            "linger.ms": spec.get("linger_ms", 1),
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 2_097_151,
        }
    )
    topic, count, rate = spec["topic"], spec["count"], spec["rate"]
    start_at = spec.get("start_at", time.time())
    pad = b"x" * (spec["size"] - _HEAD.size)
    sent = 0
    while sent < count:
        now = time.time()
        due = count if not rate else min(count, int((now - start_at) * rate) + 1)
        if due <= sent:
            time.sleep(min(0.001, max(0.0, start_at + sent / rate - now)))
            continue
        sent_ns = time.time_ns()
        for index in range(sent, due):
            value = _HEAD.pack(sent_ns, index) + pad
            while True:
                try:
                    producer.produce(topic, value, KEYS[index % 1000])
                    break
                except BufferError:
                    producer.poll(0.01)
        sent = due
        producer.poll(0)
    if producer.flush(120):
        raise RuntimeError("the paced producer could not deliver its records")
    return sent


def read(spec: dict[str, Any]) -> dict[str, Any]:
    """Read ``topic`` from the beginning until indices ``[first, last)`` all arrived.

    Latency of an index is its first arrival's clock minus its stamp (a duplicate of an
    at_least_once pipeline counts as output, not as a sample). Stops at ``deadline`` whatever
    arrived. ``window`` (epoch seconds, start and end): output records that arrived in it.
    """
    consumer = Consumer(
        _harness.raw_consumer_config(
            {
                "bootstrap.servers": spec["bootstrap"],
                "group.id": "latency-reader",
                "enable.auto.commit": False,
                "isolation.level": spec["isolation"],
                # the broker answers a fetch as soon as a transaction marker moves the LSO; the
                # bound only caps what a missed wake-up could add to every pipeline alike
                "fetch.wait.max.ms": 50,
            }
        )
    )
    topic, first, last = spec["topic"], spec["first"], spec["last"]
    parts = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in parts])
    consumer.consume(1, 0.5)  # start fetching before the pipeline writes anything
    print("READY", flush=True)
    win_start, win_end = spec.get("window", (0.0, 0.0))
    seen = bytearray(last - first)
    latencies: list[float] = []
    in_window = 0
    first_at = last_at = 0.0
    while len(latencies) < last - first and time.time() < spec["deadline"]:
        # consume(n, timeout) returns only when it has n records or the timeout passed, which
        # would add up to the timeout to every latency: wait for one, then take what is there
        head = consumer.poll(0.1)
        if head is None:
            continue
        msgs = [head, *consumer.consume(999, 0)]
        now_ns = time.time_ns()
        now = now_ns / 1e9
        first_at = first_at or now
        if win_start <= now < win_end:
            in_window += len(msgs)
        for m in msgs:
            value = m.value()
            if m.error() is not None or value is None:
                continue
            sent_ns, index = _HEAD.unpack_from(value)
            if first <= index < last and not seen[index - first]:
                seen[index - first] = 1
                latencies.append((now_ns - sent_ns) / 1e6)
                last_at = now
    consumer.close()
    return {
        **summarise(latencies),
        "samples": len(latencies),
        "missing": last - first - len(latencies),
        "in_window": in_window,
        "first_at": first_at,
        "last_at": last_at,
    }


def pipeline(kind: str, spec: dict[str, Any]) -> None:
    """Copy ``source`` to ``output`` until SIGTERM: the SDK Processor or the hand-written loop."""
    bootstrap, source, out = spec["bootstrap"], spec["source"], spec["output"]
    interval_ms = spec["commit_interval_ms"]
    ready = False

    def announce() -> None:
        nonlocal ready
        if not ready:
            ready = True
            print("READY", flush=True)

    if kind == "hand-written":
        stopping = False

        def stop(_signum: int, _frame: Any) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGTERM, stop)
        consumer, producer = _rpw.eos_clients(bootstrap)
        consumer.subscribe([source], on_assign=lambda _c, _p: announce())
        _rpw.eos_loop(
            consumer, producer, out, until=lambda _seen: stopping, interval_s=interval_ms / 1000
        )
        consumer.close()
        return
    from sdk.processor import OutputRecord, Processor, Progress

    guarantee = "at_least_once" if kind == "processor-alo" else "exactly_once"
    profile = _rpw.processing_profile(
        bootstrap,
        guarantee,
        default_cap=kind == "processor-eos-defaults",
        commit_interval_ms=interval_ms,
    )

    def on_progress(event: Progress) -> None:
        if event.event == "assigned" and event.assignment:
            announce()

    def copy(record: Any) -> list[OutputRecord]:
        return [OutputRecord(out, record.value, record.key)]

    proc = Processor(profile, [source], instance_id="latency", on_progress=on_progress)
    proc.run(copy, handle_sigterm=True)


def main(argv: list[str]) -> None:
    """Run one role (see the module docstring)."""
    role, spec = argv[0], json.loads(argv[1])
    if role == "producer":
        produce(spec)
    elif role == "reader":
        print(json.dumps(read(spec)), flush=True)
    elif role in PIPELINE_KINDS:
        pipeline(role, spec)
    else:
        raise SystemExit(f"unknown role {role!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
