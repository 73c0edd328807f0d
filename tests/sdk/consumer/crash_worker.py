"""A consumer process for the crash tests: ``python -m tests.sdk.consumer.crash_worker JSON``.

It handles numbered records (value ``str(i)``) with the SDK Consumer. The handler appends one
row per handling to an SQLite ledger (WAL) and commits it before returning. To make the
tests' SIGKILLs land mid-handling deterministically, ``block_at`` lists ``[threshold, where]``
pairs: once the ledger holds ``threshold`` rows (and the threshold's marker file does not exist
yet), the handler writes the marker and blocks for good, ``before`` or ``after`` its ledger
write; the test then SIGKILLs the process. ``delay_s`` (from ``slow_from`` rows on) slows
the handler down so that a kill at an unchosen moment still lands before the end of the topic.
SIGTERM stops it gracefully (``handle_sigterm``); it also exits 0 after ``idle_timeout_s``
seconds without records, printing its counters as JSON. ``"front": "async"`` runs the same
handler as an ``async def`` through :class:`sdk.aio.AsyncConsumer`.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from sdk.aio import AsyncConsumer
from sdk.consumer import Consumer, ConsumerRecord, ConsumerStats
from tests.sdk.consumer._support import Ledger, profile


def main() -> None:
    args: dict[str, Any] = json.loads(sys.argv[1])
    ledger = Ledger(args["ledger"])
    rows = ledger.rows()
    markers = Path(args["markers"])
    blocks = [(int(t), str(where)) for t, where in args.get("block_at", [])]
    delay = float(args.get("delay_s", 0.0))
    slow_from = int(args.get("slow_from", 0))  # the per-record delay starts at this many rows

    def block_if_due(where: str) -> None:
        for threshold, at in blocks:
            marker = markers / f"blocked-{threshold}"
            if at == where and rows >= threshold and not marker.exists():
                marker.write_text(f"{rows} {where}")
                while True:  # mid-handling: wait for the SIGKILL
                    time.sleep(1)

    def handler(record: ConsumerRecord) -> None:
        nonlocal rows
        block_if_due("before")
        ledger.record(int(record.value))
        rows += 1
        block_if_due("after")
        if delay and rows >= slow_from:
            time.sleep(delay)

    extras: dict[str, Any] = {}
    if args.get("instance"):
        extras["group.instance.id"] = args["instance"]  # static member: restarts rejoin at once
    prof = profile(
        args["bootstrap"],
        args["guarantee"],
        args["group"],
        batch_size=args.get("batch_size", 200),
        auto_commit_interval_ms=args.get("auto_commit_interval_ms", 1_000),
        extras=extras,
    )
    idle = args.get("idle_timeout_s", 5.0)
    stats: ConsumerStats
    if args.get("front") in ("async", "async-bytes"):
        # async-bytes: no deserializer, so at_least_once polls and handles on the loop's own
        # thread (sdk/aio/_on_loop.py); with one, each batch crosses from a worker thread
        options: dict[str, Any] = (
            {} if args["front"] == "async-bytes" else {"value_deserializer": "str"}
        )

        async def async_handler(record: ConsumerRecord) -> None:
            handler(record)  # the ledger write is the work; on the loop, as a service's is

        async def run() -> ConsumerStats:
            async with AsyncConsumer(prof, [args["topic"]], **options) as c:
                return await c.run(async_handler, idle_timeout_s=idle, handle_sigterm=True)

        stats = asyncio.run(run())
    else:
        with Consumer(prof, [args["topic"]], value_deserializer="str") as consumer:
            stats = consumer.run(handler, idle_timeout_s=idle, handle_sigterm=True)
    print(json.dumps({k: v for k, v in asdict(stats).items() if k != "errors"}), flush=True)


if __name__ == "__main__":
    main()
