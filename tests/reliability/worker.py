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
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Producer as KafkaProducer

from sdk.processor import OutputRecord, Processor
from tests.sdk.processor.worker import build_profile


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


def main() -> None:
    args: dict[str, Any] = json.loads(sys.argv[1])
    faulthandler.register(signal.SIGUSR1)  # the pipeline's watchdog asks for the stacks
    output = args["output"]
    freeze = Path(args["freeze"]) if args.get("freeze") else None
    gate = Path(args["gate"]) if args.get("gate") else None

    def handler(record: Any) -> list[OutputRecord]:
        return [
            OutputRecord(
                topic=output, key=record.key(), value=record.value(), headers=record.headers()
            )
        ]

    processor = Processor(
        build_profile(args),
        [args["input"]],
        handler,
        instance_id=args["instance"],
        on_fenced="recreate",
        producer_factory=lambda config: GatedProducer(config, freeze, gate),
    )
    stats_path = Path(args["stats"])

    def dump() -> None:
        tmp = stats_path.with_suffix(".tmp")
        data = {k: v for k, v in vars(processor.stats).items() if k != "events"}
        data["events"] = processor.stats.events[-30:]
        tmp.write_text(json.dumps(data))
        tmp.replace(stats_path)

    def dumper() -> None:
        while True:
            time.sleep(0.5)
            try:
                dump()
            except Exception as exc:  # keep the worker alive
                print(f"stats dump failed: {exc!r}", file=sys.stderr)

    threading.Thread(target=dumper, daemon=True).start()
    signal.signal(signal.SIGTERM, lambda *_: processor.stop())
    processor.run()
    dump()


if __name__ == "__main__":
    main()
