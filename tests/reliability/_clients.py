"""The clients a network case runs beside the exactly-once Processor (see ``_network.py``).

Each is an SDK front end in its own process, connected through the proxies, copying the same
numbered input records into a store the SDK does not count for us:

============  ==============================================  ===========================
name          process                                         counted from
============  ==============================================  ===========================
consumer      ``Consumer`` at_least_once (crash_worker)       its SQLite ledger
consumer_amo  ``Consumer`` at_most_once (crash_worker)        its SQLite ledger
queue         ``QueueConsumer`` at_least_once (queue worker)  its SQLite ledger
queue_tuned   the same, ``socket.timeout.ms`` 5000            its SQLite ledger
sink          ``DatabaseSink`` exactly_once into SQLite       its ``out`` table, by SQL
============  ==============================================  ===========================

``queue_tuned`` shows the workaround for librdkafka's share consumer stalling on a silent
leader (docs/reliability.md, "A black-holed leader stalls the queue").

Each reports a *position* per input partition, read outside the client on every call: the
group's committed offset on the brokers' direct listener (consumers), the positions table in
the database (sink), and, for the queue (a share group keeps no position per partition), the
handlings in its ledger of records from that partition. Recovery after a heal is measured on it.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sdk.partitioners._native import MURMUR2
from tests.sdk.consumer._support import Ledger

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ("consumer", "consumer_amo", "queue", "queue_tuned", "sink")
GUARANTEES = {
    "consumer": "at_least_once",
    "consumer_amo": "at_most_once",
    "queue": "at_least_once",
    "queue_tuned": "at_least_once",
    "sink": "exactly_once",
}
SINK_TABLE = "CREATE TABLE out (part INTEGER NOT NULL, off INTEGER NOT NULL, value INTEGER)"

Committed = Callable[[str], "dict[int, int] | None"]
"""The committed offset per input partition of a group (None while unknown)."""


class ClientProcess:
    """One front end under test: its process, position, counts and counters."""

    module = ""

    def __init__(
        self, name: str, tmp: Path, args: dict[str, Any], partitions: int, committed: Committed
    ) -> None:
        self.name = name
        self.guarantee = GUARANTEES[name]
        self.group = str(args["group"])
        self.tmp = tmp
        self.args = args
        self.partitions = partitions
        self.committed = committed
        self.log_path = tmp / f"{name}-{time.time_ns()}.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the process (output to its log)."""
        with self.log_path.open("wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", self.module, json.dumps(self.args)],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def exited(self) -> str | None:
        """Why the process is gone (with its log's tail), or None while it runs."""
        if self.proc is None or self.proc.poll() is None:
            return None
        return f"{self.name} exited {self.proc.returncode}:\n{self.tail()}"

    def position(self) -> dict[int, int] | None:
        """Where the client stands on each input partition (None while unknown)."""
        return self.committed(self.group)

    def drained(self, ends: dict[int, int]) -> bool:
        """True once everything up to ``ends`` (next offset per partition) is done."""
        now = self.position()
        return now is not None and all(now.get(p, 0) >= o for p, o in ends.items())

    def stop(self) -> dict[str, Any]:
        """SIGTERM (each worker stops gracefully, committing), then the counters it printed."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.counters()

    def counters(self) -> dict[str, Any]:
        """The non-zero integer counters of the last JSON line of its log."""
        for line in reversed(self.log_path.read_text(errors="replace").splitlines()):
            if line.startswith("{"):
                return _ints(json.loads(line))
        return {}

    def counts(self) -> dict[int, int]:
        """How many times each input value was handled (written)."""
        raise NotImplementedError

    def tail(self, lines: int = 30) -> str:
        """The last lines of its log (librdkafka's own lines left out)."""
        text = self.log_path.read_text(errors="replace").splitlines()
        return "\n".join(x for x in text[-lines:] if not x.startswith("%"))


class ConsumerClient(ClientProcess):
    """The SDK ``Consumer`` (``tests.sdk.consumer.crash_worker``), one ledger row per handling."""

    module = "tests.sdk.consumer.crash_worker"

    def __init__(self, name: str, tmp: Path, base: dict[str, Any], **kw: Any) -> None:
        self.ledger = tmp / f"{name}.db"
        Ledger(self.ledger).close()  # the table exists before the worker starts
        args = {
            **base,
            "guarantee": GUARANTEES[name],
            "ledger": str(self.ledger),
            "markers": str(tmp),
            "block_at": [],
            "idle_timeout_s": 3_600.0,  # stopped by SIGTERM, never for lack of records
            "auto_commit_interval_ms": 200,
            "batch_size": 200,
        }
        super().__init__(name, tmp, args, **kw)

    def counts(self) -> dict[int, int]:
        ledger = Ledger(self.ledger)
        try:
            return ledger.counts()
        finally:
            ledger.close()


class QueueClient(ConsumerClient):
    """The SDK ``QueueConsumer`` (``tests.sdk.queue.worker``), one ledger row per handling."""

    module = "tests.sdk.queue.worker"

    def __init__(self, name: str, tmp: Path, base: dict[str, Any], **kw: Any) -> None:
        extras = {"socket.timeout.ms": 5_000} if name == "queue_tuned" else {}
        super().__init__(name, tmp, {**base, "mode": "queue", "extras": extras}, **kw)
        self._partition_of = MURMUR2.for_topic(base["topic"])
        self._keys = int(base.get("keys", 1000))
        self._read = 0
        self._per_partition: Counter[int] = Counter()
        self._distinct: set[int] = set()
        self._db: sqlite3.Connection | None = None

    def _partition(self, value: int) -> int:
        """The partition the source's producer put ``value`` in (key ``k<value % keys>``)."""
        key = f"k{value % self._keys}".encode()
        return self._partition_of.partition(key, None, self.partitions)

    def position(self) -> dict[int, int] | None:
        """Handlings so far of records from each partition (the ledger, read incrementally)."""
        if self._db is None:
            self._db = sqlite3.connect(str(self.ledger), timeout=30)
        rows = self._db.execute(
            "SELECT rowid, n FROM handled WHERE rowid > ? ORDER BY rowid", (self._read,)
        ).fetchall()
        for rowid, n in rows:
            self._read = rowid
            self._per_partition[self._partition(n)] += 1
            self._distinct.add(n)
        return {p: self._per_partition[p] for p in range(self.partitions)}

    def drained(self, ends: dict[int, int]) -> bool:
        """Every record up to ``ends`` handled at least once (handlings count a repeat twice)."""
        self.position()
        return len(self._distinct) >= sum(ends.values())

    def counters(self) -> dict[str, Any]:
        return {}  # the queue worker prints its stats as text, not JSON

    def stop(self) -> dict[str, Any]:
        if self._db is not None:
            self._db.close()
        return super().stop()


class SinkClient(ClientProcess):
    """``sdk.sink.DatabaseSink`` exactly_once into SQLite (``tests.sdk.sink.sink_worker``)."""

    module = "tests.sdk.sink.sink_worker"

    def __init__(self, name: str, tmp: Path, base: dict[str, Any], **kw: Any) -> None:
        self.path = tmp / "sink.db"
        self.control = tmp / "sink-control"
        self.control.mkdir()
        with sqlite3.connect(self.path) as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(SINK_TABLE)
        db.close()
        args = {
            **base,
            "guarantee": "exactly_once",
            "wid": "sink",
            "dir": str(self.control),
            "database": "sqlite",
            "path": str(self.path),
            "delay_s": 0.0,
            "batch_size": 500,
        }
        super().__init__(name, tmp, args, **kw)
        self._topic = str(base["topic"])

    def position(self) -> dict[int, int] | None:
        """The next offset per partition in the sink's positions table (what it committed)."""
        try:
            with sqlite3.connect(self.path, timeout=30) as db:
                rows = db.execute(
                    "SELECT kafka_partition, next_offset FROM kafka_sink_positions "
                    "WHERE group_id = ? AND topic = ?",
                    (self.group, self._topic),
                ).fetchall()
            db.close()
        except sqlite3.OperationalError:  # the sink has not created its table yet
            return None
        return {p: 0 for p in range(self.partitions)} | {int(p): int(o) for p, o in rows}

    def counters(self) -> dict[str, Any]:
        stats = self.control / "stats-sink.json"
        if not stats.exists():
            return {}
        return {k: v for k, v in _ints(json.loads(stats.read_text())).items() if k != "pid"}

    def counts(self) -> dict[int, int]:
        with sqlite3.connect(self.path, timeout=30) as db:
            rows = db.execute("SELECT value, COUNT(*) FROM out GROUP BY value").fetchall()
        db.close()
        return {int(v): int(n) for v, n in rows}


def _ints(found: dict[str, Any]) -> dict[str, int]:
    """The non-zero integer counters of a JSON object (flags left out)."""
    return {k: v for k, v in found.items() if type(v) is int and v}


KINDS: dict[str, type[ClientProcess]] = {
    "consumer": ConsumerClient,
    "consumer_amo": ConsumerClient,
    "queue": QueueClient,
    "queue_tuned": QueueClient,
    "sink": SinkClient,
}


def make_client(
    name: str,
    tmp: Path,
    bootstrap: str,
    topic: str,
    group: str,
    partitions: int,
    committed: Committed,
) -> ClientProcess:
    """The client ``name`` (one of :data:`CLIENTS`) consuming ``topic`` as ``group``."""
    base = {"bootstrap": bootstrap, "topic": topic, "group": group}
    return KINDS[name](name, tmp, base, partitions=partitions, committed=committed)
