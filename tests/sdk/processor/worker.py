"""A processor process for the kill/zombie tests: ``python -m tests.sdk.processor.worker JSON``.

It copies ``input`` to ``output`` (same key, value prefixed with nothing: a pure copy) under the
given guarantee, and rewrites ``<stats>`` (JSON counters and events) twice a second. SIGTERM stops
it cleanly; SIGKILL is what the tests use to crash it. ``"concurrency": N`` runs the handler
on N threads (``Processor.run(concurrency=N)``). ``"front": "async"`` runs the same copy
through :class:`sdk.aio.AsyncProcessor` with an async handler (``run(handle_sigterm=True)``).
``"registry": URL`` reads Avro through that schema registry and writes ``{"id", "note"}``
records with the Avro schema ``"out_schema"`` (tests/sdk/schemas/test_evolution.py).
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from sdk.aio import AsyncProcessor
from sdk.processor import OutputRecord, Processor
from sdk.profiles import ProcessingProfile


def build_profile(args: dict[str, Any]) -> ProcessingProfile:
    guarantee = args["guarantee"]
    producer: dict[str, Any] = {"guarantee": guarantee, "bootstrap_servers": args["bootstrap"]}
    if guarantee == "exactly_once":
        producer["transactional_id_prefix"] = args["txn_prefix"]
        producer["transaction_timeout_ms"] = args.get("transaction_timeout_ms", 60_000)
        if "transaction_call_timeout_ms" in args:
            producer["transaction_call_timeout_ms"] = args["transaction_call_timeout_ms"]
    return ProcessingProfile(
        guarantee=guarantee,
        commit_interval_ms=args.get("commit_interval_ms", 100),
        consumer={
            "guarantee": guarantee,
            "bootstrap_servers": args["bootstrap"],
            "group_id": args["group"],
            "session_timeout_ms": args.get("session_timeout_ms", 6_000),
            "batch_size": args.get("batch_size", 200),
            "auto_commit_interval_ms": 200,
        },
        producer=producer,
    )


def run_dumping_stats(
    processor: Processor | AsyncProcessor,
    handler: Any,
    stats_path: Path,
    *,
    keep_events: int,
    concurrency: int = 1,
) -> None:
    """Run ``processor`` with ``handler`` until SIGTERM; dump its stats (last ``keep_events``
    events) as JSON to ``stats_path`` every 0.5 s and at the end, so the test reads them even
    after a SIGKILL."""

    def dump() -> None:
        tmp = stats_path.with_suffix(".tmp")
        s = processor.stats
        data = {k: v for k, v in vars(s).items() if k != "events"}
        data["events"] = s.events[-keep_events:]
        data["assignment"] = [list(tp) for tp in processor.assignment]  # what the faults wait on
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
    if isinstance(processor, AsyncProcessor):
        asyncio.run(processor.run(handler, handle_sigterm=True))
    else:
        signal.signal(signal.SIGTERM, lambda *_: processor.stop())
        processor.run(handler, concurrency=concurrency)
    dump()


def main() -> None:
    args: dict[str, Any] = json.loads(sys.argv[1])
    delay = float(args.get("delay_per_100", 0.0))
    output = args["output"]
    seen = 0

    freeze = Path(args["freeze"]) if args.get("freeze") else None
    held: list[Processor] = []

    def frozen() -> bool:
        # A stuck handler in the middle of a transaction that already holds records: the test
        # then SIGSTOPs the process, so it is a zombie with an open transaction, deterministically.
        assert freeze is not None
        if freeze.exists() and held and held[0]._commits.pending > 0:
            freeze.with_suffix(".held").write_text(str(held[0]._commits.pending))
            return True
        return False

    def handler(record: Any) -> list[OutputRecord]:
        nonlocal seen
        seen += 1
        if delay and seen % 100 == 0:
            time.sleep(delay)
        if freeze is not None and seen % 50 == 0 and frozen():
            while freeze.exists():
                time.sleep(0.02)
        return [OutputRecord(topic=output, key=record.key, value=record.value)]

    async def async_handler(record: Any) -> list[OutputRecord]:
        nonlocal seen
        seen += 1
        if delay and seen % 100 == 0:
            await asyncio.sleep(delay)
        if freeze is not None and seen % 50 == 0 and frozen():
            while freeze.exists():
                await asyncio.sleep(0.02)
        return [OutputRecord(topic=output, key=record.key, value=record.value)]

    options: dict[str, Any] = {"instance_id": args.get("instance"), "on_fenced": "recreate"}
    if args.get("registry"):
        from sdk.schemas import SchemaRegistryConfig, avro_deserializer, avro_serializer

        config = SchemaRegistryConfig(url=args["registry"])
        options["value_deserializer"] = avro_deserializer(config)
        options["value_serializer"] = avro_serializer(config, args["out_schema"])

        def handler(record: Any) -> list[OutputRecord]:
            nonlocal seen
            seen += 1
            if delay and seen % 100 == 0:
                time.sleep(delay)
            value = {"id": record.value["id"], "note": record.value.get("note", "")}
            return [OutputRecord(topic=output, key=record.key, value=value)]

    processor: Processor | AsyncProcessor
    if args.get("front") == "async":
        processor = AsyncProcessor(build_profile(args), [args["input"]], **options)
        held.append(processor.sync)
        run_dumping_stats(processor, async_handler, Path(args["stats"]), keep_events=50)
    else:
        processor = Processor(build_profile(args), [args["input"]], **options)
        held.append(processor)
        run_dumping_stats(
            processor,
            handler,
            Path(args["stats"]),
            keep_events=50,
            concurrency=args.get("concurrency", 1),
        )


if __name__ == "__main__":
    main()
