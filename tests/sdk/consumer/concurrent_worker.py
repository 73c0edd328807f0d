"""A concurrent consumer process for the kill test: ``python -m ...concurrent_worker JSON``.

Handles numbered records (value ``str(i)``, key ``k<i % keys>``) with
``Consumer.run(concurrency=N, ordering="key")``; each handling sleeps 0-3 ms (an I/O
stand-in) and then appends ``(n, key, partition, offset, pid)`` to an SQLite ledger (WAL,
committed before the handler returns), from the worker threads under one lock. The test
SIGKILLs it at unchosen moments; SIGTERM or ``idle_timeout_s`` without records ends it
cleanly (printing its counters).
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import sys
import threading
import time
from dataclasses import asdict
from typing import Any

from sdk.consumer import Consumer, ConsumerRecord
from tests.sdk.consumer._support import profile


def main() -> None:
    args: dict[str, Any] = json.loads(sys.argv[1])
    db = sqlite3.connect(args["ledger"], timeout=30, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    lock = threading.Lock()
    pid = os.getpid()
    rng = random.Random(pid)

    def handler(record: ConsumerRecord) -> None:
        time.sleep(rng.random() * 0.003)
        with lock:
            db.execute(
                "INSERT INTO handled (n, k, p, o, pid) VALUES (?, ?, ?, ?, ?)",
                (
                    int(record.value),
                    record.key.decode() if record.key else "",
                    record.partition,
                    record.offset,
                    pid,
                ),
            )

    prof = profile(
        args["bootstrap"],
        "at_least_once",
        args["group"],
        batch_size=args.get("batch_size", 100),
        auto_commit_interval_ms=200,
        auto_offset_reset="earliest",
        extras={"group.instance.id": f"{args['group']}-w"},  # a restart rejoins at once
    )
    with Consumer(prof, [args["topic"]], value_deserializer="str") as consumer:
        stats = consumer.run(
            handler,
            concurrency=args["concurrency"],
            ordering="key",
            max_buffered=args["max_buffered"],
            idle_timeout_s=args.get("idle_timeout_s", 4.0),
            handle_sigterm=True,
        )
    print(json.dumps({k: v for k, v in asdict(stats).items() if k != "errors"}), flush=True)


if __name__ == "__main__":
    main()
