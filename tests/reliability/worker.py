"""A processor process for the reliability pipeline: ``python -m tests.reliability.worker JSON``.

It copies ``input`` to ``output`` (same key, value and headers) with the SDK ``Processor`` under
the given guarantee, like ``tests.sdk.processor.worker``, plus two deterministic fault hooks:

* ``freeze``: while that file exists, ``produce`` blocks once the open transaction already holds
  a record (writes ``<freeze>.held``), so a SIGSTOP then makes a zombie with an open transaction.
* ``gate``: while that file exists, ``commit_transaction`` (commit step 3, after the flush and
  ``send_offsets_to_transaction``) waits: it writes ``<gate>.at``, waits for the file to go, writes
  ``<gate>.called`` and only then sends the commit. The pipeline freezes the transaction
  coordinator in between, so the commit request is in flight when the coordinator is killed.
"""

from __future__ import annotations

import faulthandler
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import Producer as KafkaProducer

from sdk.processor import OutputRecord, Processor
from tests.sdk.processor.worker import build_profile, run_dumping_stats


def _wait_while(path: Path) -> None:
    while path.exists():
        time.sleep(0.02)


class GatedProducer:
    """Holds a ``confluent_kafka.Producer`` and adds the ``freeze`` and ``gate`` holds."""

    def __init__(self, config: dict[str, Any], freeze: Path | None, gate: Path | None) -> None:
        self._client = KafkaProducer(config)
        self._freeze = freeze
        self._gate = gate
        self._in_transaction = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def begin_transaction(self, *args: Any) -> Any:
        self._in_transaction = 0
        return self._client.begin_transaction(*args)

    def produce(self, *args: Any, **kwargs: Any) -> Any:
        freeze = self._freeze
        if freeze is not None and self._in_transaction and freeze.exists():
            freeze.with_suffix(".held").write_text(str(self._in_transaction))
            _wait_while(freeze)
        self._in_transaction += 1
        return self._client.produce(*args, **kwargs)

    def commit_transaction(self, *args: Any) -> Any:
        gate = self._gate
        if gate is not None and gate.exists():
            gate.with_suffix(".at").write_text(str(time.time()))
            _wait_while(gate)
            gate.with_suffix(".called").write_text(str(time.time()))
        return self._client.commit_transaction(*args)


class TracingConsumer:
    """Holds a ``confluent_kafka.Consumer``; appends each batch and commit to a trace file.

    One line per event: ``<time> consume p<partition> <first>-<last> n=<count>``, ``<time>
    commit [(p, offset), ...] ok|<error>``, ``<time> assign|revoke|lost [...]``. Enabled by the
    ``trace`` argument (``RELIABILITY_TRACE=1`` in the pipeline); used to attribute duplicates.
    """

    def __init__(self, config: dict[str, Any], path: Path) -> None:
        from confluent_kafka import Consumer as KafkaConsumer

        self._client = KafkaConsumer(config)
        self._out = path.open("a", buffering=1)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    def _line(self, text: str) -> None:
        self._out.write(f"{time.time():.3f} {text}\n")

    def subscribe(self, topics: list[str], **callbacks: Any) -> None:
        def wrap(kind: str, fn: Any) -> Any:
            def cb(consumer: Any, partitions: list[Any]) -> None:
                self._line(f"{kind} {[(tp.partition) for tp in partitions]}")
                fn(consumer, partitions)

            return cb

        self._client.subscribe(topics, **{k: wrap(k[3:], f) for k, f in callbacks.items()})

    def consume(self, *args: Any) -> Any:
        batch = self._client.consume(*args)
        spans: dict[int, list[int]] = {}
        for m in batch:
            if m.error() is None:
                spans.setdefault(m.partition(), []).append(m.offset())
        for part, offs in sorted(spans.items()):
            self._line(f"consume p{part} {offs[0]}-{offs[-1]} n={len(offs)}")
        return batch

    def commit(self, *args: Any, **kwargs: Any) -> Any:
        offsets = [(tp.partition, tp.offset) for tp in kwargs.get("offsets") or []]
        try:
            result = self._client.commit(*args, **kwargs)
        except Exception as exc:
            self._line(f"commit {offsets} {exc!r}")
            raise
        self._line(f"commit {offsets} ok")
        return result


def main() -> None:
    args: dict[str, Any] = json.loads(sys.argv[1])
    faulthandler.register(signal.SIGUSR1)  # the pipeline's watchdog asks for the stacks
    output = args["output"]
    freeze = Path(args["freeze"]) if args.get("freeze") else None
    gate = Path(args["gate"]) if args.get("gate") else None

    def handler(record: Any) -> list[OutputRecord]:
        return [
            OutputRecord(topic=output, key=record.key, value=record.value, headers=record.headers)
        ]

    debug = os.environ.get("RELIABILITY_KAFKA_DEBUG")  # librdkafka debug contexts, into the log

    def consumer(config: dict[str, Any]) -> Any:
        # the faults find this processor's member in the group by its client.id
        config = {**config, "client.id": args["instance"]}
        if debug:
            config = {**config, "debug": debug}
        if args.get("trace"):
            return TracingConsumer(config, Path(args["trace"]))
        return ConfluentConsumer(config)

    processor = Processor(
        build_profile(args),
        [args["input"]],
        instance_id=args["instance"],
        on_fenced="recreate",
        producer_factory=lambda config: GatedProducer(config, freeze, gate),
        consumer_factory=consumer,
    )
    run_dumping_stats(processor, handler, Path(args["stats"]), keep_events=30)


if __name__ == "__main__":
    main()
