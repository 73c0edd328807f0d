"""A sink process for the kill tests: ``python -m tests.sdk.sink.sink_worker JSON``.

It runs :class:`sdk.sink.DatabaseSink` (``run_batch``) and INSERTs ``(partition, offset,
value)`` of each record into the table ``out``, which has no unique constraint: only the sink
keeps a record from landing twice. The handler sleeps ``delay_s`` after its INSERT, inside the
batch's transaction, until the file ``fast`` appears in the control directory ``dir``.

The test steers it through files in ``dir`` (``<wid>`` is this process's worker id, also its
PostgreSQL ``application_name``):

- ``stats-<wid>.json``: its :class:`~sdk.sink.SinkStats` counters, rewritten every 0.2 s and
  once more on exit (``"final": true``; SIGTERM stops the sink after the batch in hand).
- ``hold-<wid>`` (written by the test): the next non-empty poll is held before the sink sees it:
  the records go to ``held-<wid>.json`` and the poll returns only once ``release-<wid>`` exists.
  The test freezes the process there (SIGSTOP), between transactions with a batch in hand.
- ``gap_s``: until ``fast`` appears, each non-empty poll returns after this pause, outside
  any transaction, so that one SQLite writer does not keep the write lock from the others
  (a waiting SQLite connection only looks at the lock every few tens of milliseconds).
- ``txn-<wid>`` (with ``"mark": true``): ``pid time`` written by the handler after its INSERT,
  before its sleep, so a SIGKILL can be shown to land inside the transaction (SQLite has no
  ``pg_stat_activity``).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from dataclasses import fields
from pathlib import Path
from typing import Any

from sdk.sink import Database, DatabaseSink, SinkStats, Transaction, postgresql, sqlite
from tests.sdk.consumer._support import profile


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Replace ``path`` atomically, so a reader never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def counters(stats: SinkStats) -> dict[str, int]:
    """The integer counters (read from another thread: no container is iterated)."""
    out = {}
    for f in fields(stats):
        value = getattr(stats, f.name)
        if isinstance(value, int):
            out[f.name] = value
    return out


class HoldingClient:
    """The Kafka consumer, with one held poll on request (everything else passes through)."""

    def __init__(self, inner: Any, control: Path, wid: str, gap_s: float) -> None:
        self._inner = inner
        self._hold = control / f"hold-{wid}"
        self._held = control / f"held-{wid}.json"
        self._release = control / f"release-{wid}"
        self._fast = control / "fast"
        self._gap = gap_s

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]:
        messages: list[Any] = self._inner.consume(num_messages, timeout)
        data = [m for m in messages if m.error() is None]
        if data and self._hold.exists():
            self._hold.unlink()
            records = [[m.partition(), m.offset(), int(m.value())] for m in data]
            write_json(self._held, {"pid": os.getpid(), "records": records})
            while not self._release.exists():  # the test SIGSTOPs the process here
                time.sleep(0.01)
        if data and self._gap and not self._fast.exists():
            time.sleep(self._gap)  # outside any transaction: other SQLite writers get the lock
        return messages

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def main() -> None:
    args: dict[str, Any] = json.loads(sys.argv[1])
    wid = str(args["wid"])
    control = Path(args["dir"])
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format=f"%(asctime)s {wid} %(name)s %(levelname)s %(message)s",
    )
    database: Database
    if args["database"] == "postgresql":
        database = postgresql(
            f"{args['uri']}&application_name={wid}",
            idle_in_transaction_timeout_s=args["idle_in_transaction_timeout_s"],
            lock_timeout_s=args["lock_timeout_s"],
        )
        insert = "INSERT INTO out (part, off, value) VALUES (%s, %s, %s)"
    else:
        database = sqlite(args["path"])
        insert = "INSERT INTO out (part, off, value) VALUES (?, ?, ?)"
    fast = control / "fast"
    marker = control / f"txn-{wid}"
    mark = bool(args.get("mark"))
    delay = float(args["delay_s"])

    def handler(records: list[Any], tx: Transaction) -> None:
        tx.executemany(insert, [(r.partition, r.offset, int(r.value)) for r in records])
        if delay and not fast.exists():
            if mark:
                write_json(marker, {"pid": os.getpid(), "time": time.time()})
            time.sleep(delay)

    extras: dict[str, Any] = dict(args.get("extras", {}))
    if args.get("instance"):
        extras["group.instance.id"] = args["instance"]  # static: a restart rejoins at once
    prof = profile(
        args["bootstrap"],
        args["guarantee"],
        args["group"],
        batch_size=args["batch_size"],
        extras=extras,
    )
    sink = DatabaseSink(
        prof,
        [args["topic"]],
        database,
        retry_timeout_s=args.get("retry_timeout_s", 120.0),
        client_factory=lambda config: _holding(config, control, wid, args.get("gap_s", 0.0)),
    )
    stats_path = control / f"stats-{wid}.json"
    done = threading.Event()
    lock = threading.Lock()

    def dump(final: bool, error: str | None = None) -> None:
        data: dict[str, Any] = {"pid": os.getpid(), "final": final, "error": error}
        with lock:
            if final or not done.is_set():  # the final dump is never overwritten
                write_json(stats_path, {**data, **counters(sink.stats)})

    def dumping() -> None:
        owned: list[Any] = []
        while not done.wait(0.2):
            dump(False)
            try:
                now = sink.assignment
            except RuntimeError:  # changed while read (the callbacks run in the main thread)
                continue
            if now != owned:
                owned = now
                logging.getLogger("worker").warning("owns %s", [p for _, p in now])

    threading.Thread(target=dumping, daemon=True).start()
    error: str | None = None
    try:
        with sink:
            sink.run_batch(handler, handle_sigterm=True)
    except BaseException as exc:
        error = f"{type(exc).__name__}: {exc}"
        raise
    finally:
        done.set()
        dump(True, error)


def _holding(config: dict[str, Any], control: Path, wid: str, gap_s: float) -> Any:
    from confluent_kafka import Consumer

    return HoldingClient(Consumer(config), control, wid, gap_s)


if __name__ == "__main__":
    main()
