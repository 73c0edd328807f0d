"""A sink process that freezes itself inside its batch transaction, for the freeze tests.

``python -m tests.sdk.sink.freeze_worker JSON``. It runs :class:`~sdk.sink.DatabaseSink` (or
:class:`~sdk.aio.AsyncDatabaseSink` with ``"asyncio": true``) with ``run_batch``, writing
``(partition, offset, value)`` of each record into the table ``out`` with the statement kind
``write``: ``executemany``, ``execute`` (one per record), or ``copy`` (PostgreSQL's
``COPY ... FROM STDIN``). The table has no unique key: only the sink keeps a record from
landing twice.

The test steers it through files in the control directory ``dir``:

- ``stats-<wid>.json``: its :class:`~sdk.sink.SinkStats` (integers and ``blocked_by``),
  rewritten every 0.2 s and once more on exit.
- ``freeze-<wid>`` (written by the test): the next batch writes its rows (for ``copy``: the
  first row only, the COPY left open), writes ``frozen-<wid>.json`` (pid, time, the batch's
  partitions) and SIGSTOPs its own process, inside the transaction. The test SIGCONTs it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
import threading
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

from sdk.aio import AsyncDatabaseSink, async_postgresql
from sdk.sink import Database, DatabaseSink, SinkStats, postgresql, sqlite
from tests.sdk.consumer._support import profile
from tests.sdk.sink.sink_worker import write_json


def snapshot(stats: SinkStats) -> dict[str, Any]:
    return {f.name: getattr(stats, f.name) for f in fields(stats) if f.name != "errors"}


class Freezer:
    """Decides, per batch, whether this is the batch to freeze in."""

    def __init__(self, control: Path, wid: str) -> None:
        self.request = control / f"freeze-{wid}"
        self.report = control / f"frozen-{wid}.json"

    def due(self) -> bool:
        return self.request.exists()

    def freeze(self, records: list[Any]) -> None:
        self.request.unlink()
        parts = sorted({r.partition for r in records})
        write_json(self.report, {"pid": os.getpid(), "time": time.time(), "partitions": parts})
        os.kill(os.getpid(), signal.SIGSTOP)  # frozen here, the transaction open


class Paced:
    """The Kafka consumer, pausing ``gap_s`` after each non-empty poll until ``fast`` exists.

    The pause is outside any transaction: SQLite lets one writer in at a time, and a process
    that paces inside its transaction keeps the others from ever getting the lock.
    """

    def __init__(self, config: dict[str, Any], gap_s: float, fast: Path) -> None:
        from confluent_kafka import Consumer

        self._inner = Consumer(config)
        self._gap = gap_s
        self._fast = fast

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        messages: list[Any] = self._inner.consume(num_messages, timeout)
        if messages and self._gap and not self._fast.exists():
            time.sleep(self._gap)
        return messages

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def rows(records: list[Any]) -> list[tuple[int, int, int]]:
    return [(r.partition, r.offset, int(r.value)) for r in records]


def main() -> None:
    args: dict[str, Any] = json.loads(sys.argv[1])
    wid = str(args["wid"])
    control = Path(args["dir"])
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format=f"%(asctime)s {wid} %(name)s %(levelname)s %(message)s",
    )
    freezer = Freezer(control, wid)
    write = str(args["write"])
    pace = float(args.get("delay_s", 0.0))
    fast = control / "fast"

    def delay() -> float:  # pacing, inside the transaction, until the test says "fast"
        return 0.0 if fast.exists() else pace

    prof = profile(
        args["bootstrap"],
        "exactly_once",
        args["group"],
        batch_size=args["batch_size"],
        extras=dict(args.get("extras", {})),
    )
    retry = float(args.get("retry_timeout_s", 120.0))
    if args.get("asyncio"):
        sink: Any = AsyncDatabaseSink(
            prof,
            [args["topic"]],
            async_postgresql(
                args["uri"],
                transaction_timeout_s=args["transaction_timeout_s"],
                end_frozen_holders=bool(args.get("end_frozen_holders")),
                idle_in_transaction_timeout_s=args["idle_in_transaction_timeout_s"],
                lock_timeout_s=args["lock_timeout_s"],
            ),
            retry_timeout_s=retry,
        )
        stats: SinkStats = sink.stats
    else:
        database: Database
        if args["database"] == "postgresql":
            database = postgresql(
                args["uri"],
                transaction_timeout_s=args["transaction_timeout_s"],
                end_frozen_holders=bool(args.get("end_frozen_holders")),
                idle_in_transaction_timeout_s=args["idle_in_transaction_timeout_s"],
                lock_timeout_s=args["lock_timeout_s"],
            )
        else:
            database = sqlite(args["path"], busy_timeout_s=args.get("busy_timeout_s", 30.0))
        gap = float(args.get("gap_s", 0.0))
        sink = DatabaseSink(
            prof,
            [args["topic"]],
            database,
            retry_timeout_s=retry,
            client_factory=lambda config: Paced(config, gap, fast),
        )
        stats = sink.stats
    mark = "%s" if args["database"] == "postgresql" else "?"
    insert = f"INSERT INTO out (part, off, value) VALUES ({mark}, {mark}, {mark})"

    def handler(records: list[Any], tx: Any) -> None:
        data = rows(records)
        if write == "copy":
            with tx.cursor.copy("COPY out (part, off, value) FROM STDIN") as copy:
                copy.write_row(data[0])
                if freezer.due():
                    freezer.freeze(records)  # inside the COPY: the server waits for data
                for row in data[1:]:
                    copy.write_row(row)
        else:
            if write == "executemany":
                tx.executemany(insert, data)
            else:
                for row in data:
                    tx.execute(insert, row)
            if freezer.due():
                freezer.freeze(records)
        if delay():
            time.sleep(delay())

    async def async_handler(records: list[Any], tx: Any) -> None:
        await tx.executemany(insert, rows(records))
        if freezer.due():
            freezer.freeze(records)  # the whole process stops, the event loop with it
        if delay():
            await asyncio.sleep(delay())

    stats_path = control / f"stats-{wid}.json"
    done = threading.Event()

    def dumping() -> None:
        while not done.wait(0.2):
            write_json(stats_path, {"final": False, **snapshot(stats)})

    threading.Thread(target=dumping, daemon=True).start()
    error = None
    try:
        if args.get("asyncio"):

            async def run() -> None:
                async with sink:
                    await sink.run_batch(async_handler, handle_sigterm=True)

            asyncio.run(run())
        else:
            with sink:
                sink.run_batch(handler, handle_sigterm=True)
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        done.set()
        write_json(stats_path, {"final": True, "error": error, **snapshot(stats)})


if __name__ == "__main__":
    main()
