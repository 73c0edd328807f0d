"""Microbenchmark: the Processor's per-record loop against the hand-written loop, no broker.

What the SDK adds per record on the exactly-once hot path, without the broker's and
librdkafka's noise: ``--records`` real ``confluent_kafka.Message`` objects (100-byte values,
4 partitions in turn, in runs of 50-300 records, as ``consume()`` hands them out) go through

* ``hand-written``: the read-process-write benchmark's loop (``benchmarks._rpw.eos_loop``
  with its handler): ``m.error()``, ``handle(m)`` returning ``[(topic, m.value(), m.key())]``,
  ``produce`` per output;
* ``Processor``: the Processor's loop (``Emitter.run``: the view, the handler returning the
  same tuple from ``record.value`` and ``record.key``, the inline output path, the deadline
  read after each record), then the run's positions (``last_positions``), as
  ``TransactionHandling.run_until_due`` does.

``produce`` is ``slice`` on both sides: a C function of the same arity that does nothing
that varies, so librdkafka's queue (its allocations, its threads) does not add noise; what
remains is the Python work of each loop. Thread CPU per record, medians of ``--runs`` runs,
the two loops back to back in each run. Usage::

    .venv/bin/python -m benchmarks.processor_loop
    .venv/bin/python -m benchmarks.processor_loop --records 50000 --runs 21
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable

from confluent_kafka import Message

from sdk._deadline import Deadline
from sdk.producer._emitter import Emitter
from sdk.records import ConsumerRecord, Output, OutputRecord, last_positions, only_topic

TOPIC, OUT = "in", "out"


def messages(n: int, seed: int = 1) -> list[Message]:
    """``n`` messages of ``TOPIC``: 4 partitions in turn, in runs of 50-300, offsets counting up."""
    rng = random.Random(seed)
    offsets = [0, 0, 0, 0]
    out: list[Message] = []
    p = 3
    while len(out) < n:
        p = (p + 1) % 4
        for _ in range(min(rng.randint(50, 300), n - len(out))):
            o = offsets[p]
            out.append(
                Message(topic=TOPIC, partition=p, offset=o, key=b"k%d" % o, value=b"v" * 100)
            )
            offsets[p] += 1
    return out


def hand_written(msgs: list[Message], produce: Callable[..., object]) -> int:
    """The hand-written loop's per-record steps; returns the records seen."""

    def handle(m: Message) -> list[tuple[str, bytes | None, bytes | None]]:
        return [(OUT, m.value(), m.key())]

    seen = 0
    for m in msgs:
        if m.error() is not None:
            continue
        for topic_, value, key in handle(m):
            while True:
                try:
                    produce(topic_, value, key)
                    break
                except BufferError:
                    pass
        seen += 1
    return seen


def processor(
    msgs: list[Message],
    produce: Callable[..., object],
    positions: dict[tuple[str, int], int] | None = None,
) -> int:
    """The Processor's per-record loop, then the run's positions; returns the records handled.

    The positions go into ``positions`` if given (a test's check), else into a new dict.
    """

    def copy(record: ConsumerRecord) -> list[Output]:
        return [(OUT, record.value, record.key)]

    def general(out: Output, span: object) -> None:
        raise AssertionError(f"every output takes the inline path: {out!r}")

    emitter = Emitter(OutputRecord, produce, {OUT}, general, None, None)
    due = Deadline()
    due.set(time.monotonic() + 3600.0)  # the thread is started, as in a run; never passes
    try:
        n = len(msgs)
        i, produced, _, error = emitter.run(msgs, 0, n, n, copy, ConsumerRecord, due)
        last_positions(msgs[0:i], {} if positions is None else positions, only_topic([TOPIC]))
    finally:
        due.close()
    if error is not None:
        raise error
    assert produced == i == n
    return i


def measure(records: int, runs: int) -> dict[str, float]:
    """Median thread CPU per record (ns) of each loop, and the Processor's gap over the peer."""
    msgs = messages(records)
    cases = {"hand-written": hand_written, "Processor": processor}
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, loop in cases.items():
            started = time.thread_time()
            done = loop(msgs, slice)
            samples[name].append((time.thread_time() - started) / done * 1e9)
    medians = {name: statistics.median(values) for name, values in samples.items()}
    medians["gap"] = medians["Processor"] - medians["hand-written"]
    return medians


def main() -> None:
    """Print the medians of one measurement (``--records``, ``--runs``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    result = measure(args.records, args.runs)
    print(
        f"thread CPU per record, medians of {args.runs} runs of {args.records:,} records: "
        f"hand-written {result['hand-written']:.0f} ns, Processor {result['Processor']:.0f} ns, "
        f"the Processor's loop over the hand-written one {result['gap']:+.0f} ns"
    )


if __name__ == "__main__":
    main()
