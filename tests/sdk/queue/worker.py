"""A queue (or consumer-group) worker process: ``python -m tests.sdk.queue.worker JSON``.

Each record it handles is appended to a SQLite ledger (``Ledger``: one committed row per
handling, so a SIGKILL loses nothing already written): the tests count from the ledger, not
from the SDK's counters. ``mode`` is ``queue`` (a share group, ``QueueConsumer``) or ``group``
(a consumer group, ``Consumer``) for the comparison of the two models.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from sdk.consumer import Consumer
from sdk.profiles import ConsumerProfile
from sdk.queue import QueueConsumer
from tests.sdk.consumer._support import Ledger
from tests.sdk.queue._support import queue_profile


def main() -> None:
    args: dict[str, Any] = json.loads(sys.argv[1])
    ledger = Ledger(args["ledger"])
    pace = float(args.get("pace_s", 0.0))

    def handler(record: Any) -> None:
        if pace:
            time.sleep(pace)
        ledger.record(int(record.value))

    if args["mode"] == "group":
        profile = ConsumerProfile(
            guarantee=args["guarantee"],
            bootstrap_servers=args["bootstrap"],
            group_id=args["group"],
            session_timeout_ms=6_000,
        )
        with Consumer(profile, [args["topic"]]) as consumer:
            consumer.run(handler, handle_sigterm=True)
    else:
        qp = queue_profile(
            args["bootstrap"], args["guarantee"], args["group"], extras=args.get("extras", {})
        )
        with QueueConsumer(qp, [args["topic"]]) as queue:
            stats = queue.run(handler, handle_sigterm=True)
        print(f"queue stats: {stats}", flush=True)
    print(f"worker {os.getpid()} done", flush=True)


if __name__ == "__main__":
    main()
