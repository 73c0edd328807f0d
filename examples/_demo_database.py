"""The guarantees demo's database rows: Kafka → SQLite through ``sdk.sink.DatabaseSink``.

The worker writes each polled batch with plain INSERTs of (topic, partition, offset, value):
no upsert and no unique key, so a record written twice shows up as two rows. The input values
are stored in the same file, and lost and duplicated records are counted by SQL against them.
"""

from __future__ import annotations

import sqlite3
from typing import Any

GUARANTEES = ("at_least_once", "exactly_once")  # a database sink has no at_most_once
BATCH_SIZE = 500

_OUTPUT = (
    "CREATE TABLE demo_output (topic TEXT NOT NULL, kafka_partition INTEGER NOT NULL, "
    "kafka_offset INTEGER NOT NULL, value INTEGER NOT NULL)"
)
_INSERT = (
    "INSERT INTO demo_output (topic, kafka_partition, kafka_offset, value) VALUES (?, ?, ?, ?)"
)


def worker(spec: dict[str, Any]) -> None:
    """Write the input topic into the SQLite file until SIGTERM (runs in its own process)."""
    from sdk import ConsumerRecord
    from sdk.profiles import ConsumerProfile
    from sdk.sink import DatabaseSink, Transaction, sqlite

    profile = ConsumerProfile(
        guarantee=spec["guarantee"],
        bootstrap_servers=spec["bootstrap"],
        group_id=spec["group"],
        session_timeout_ms=6000,
        batch_size=BATCH_SIZE,
        # static membership (a pod with a stable name): the restarted worker takes the killed
        # one's place at once instead of waiting out its session timeout
        extras={"group.instance.id": f"{spec['group']}-worker-0"},
    )

    def write(records: list[ConsumerRecord], tx: Transaction) -> None:
        rows = [(r.topic, r.partition, r.offset, int(r.value)) for r in records]
        tx.executemany(_INSERT, rows)

    database = sqlite(spec["database"])
    with DatabaseSink(profile, [spec["input"]], database, value_deserializer="str") as sink:
        sink.run_batch(write, handle_sigterm=True)


def prepare(path: str, n: int) -> None:
    """Create the output table and store the input values ``0..n-1`` to count against."""
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(_OUTPUT)
        db.execute("CREATE TABLE demo_input (value INTEGER PRIMARY KEY)")
        db.executemany("INSERT INTO demo_input VALUES (?)", ((i,) for i in range(n)))
    db.close()


class DatabaseProgress:
    """Records committed to the database so far, read by the driver.

    exactly_once: the sum of the positions the sink committed with its rows; at_least_once
    (no positions table): the rows written (``MAX(rowid)``: rows are never deleted; a repeated
    batch counts twice). Both reads take microseconds, so the driver can kill right after a
    commit. Whether the row is finished is :meth:`complete`: a repeated batch must not count
    towards it, or the driver stops the worker before the input is all written.
    """

    def __init__(self, path: str, guarantee: str, group: str) -> None:
        self._db = sqlite3.connect(path, isolation_level=None)
        self._exact = guarantee == "exactly_once"
        if guarantee == "exactly_once":
            self._sql = "SELECT SUM(next_offset) FROM kafka_sink_positions WHERE group_id = ?"
            self._params: tuple[str, ...] = (group,)
        else:
            self._sql, self._params = "SELECT MAX(rowid) FROM demo_output", ()

    def __call__(self) -> int:
        try:
            (value,) = self._db.execute(self._sql, self._params).fetchone()
        except sqlite3.OperationalError:  # the sink has not created its positions table yet
            return 0
        return int(value or 0)

    def complete(self) -> int:
        """Input values with at least one row (exactly_once: the same as the progress)."""
        if self._exact:
            return self()
        (value,) = self._db.execute("SELECT COUNT(DISTINCT value) FROM demo_output").fetchone()
        return int(value or 0)

    def close(self) -> None:
        """Close the driver's read connection."""
        self._db.close()


def pause(done: int, target: float) -> float:
    """How long the driver waits before it reads the progress again.

    Within a batch of the kill point it reads without pausing, so the kill follows that
    batch's database commit within microseconds: with at_least_once it then often lands
    before the batch's Kafka commit, the window at-least-once duplicates come from.
    """
    return 0.0 if target - done <= BATCH_SIZE else 0.001


def count(path: str) -> dict[str, int]:
    """Count the output against the input by SQL.

    Returns:
        ``output`` rows; ``lost`` input values without a row; ``duplicated`` rows beyond the
        first of each value; ``twice`` values with more than one row.
    """
    db = sqlite3.connect(path)
    try:
        output, lost, duplicated, twice = db.execute(
            "WITH copies AS (SELECT value, COUNT(*) AS n FROM demo_output GROUP BY value) "
            "SELECT (SELECT COUNT(*) FROM demo_output), "
            "(SELECT COUNT(*) FROM demo_input WHERE value NOT IN (SELECT value FROM copies)), "
            "(SELECT COALESCE(SUM(n - 1), 0) FROM copies), "
            "(SELECT COUNT(*) FROM copies WHERE n > 1)"
        ).fetchone()
    finally:
        db.close()
    return {"output": output, "lost": lost, "duplicated": duplicated, "twice": twice}


def explain(row: dict[str, Any]) -> str:
    """What the at_least_once row's duplicates (or their absence) mean."""
    head = f"{row['label']}: "
    if row["duplicated"]:
        what = (
            f"{row['duplicated']:,} extra rows ({row['twice']:,} values written more than "
            "once): a kill landed between a batch's database commit and its Kafka commit, and "
            "the restarted worker wrote the batch again."
        )
    else:
        what = (
            "no duplicates on this run: no kill happened to land between a batch's database "
            "commit and its Kafka commit (a short window), not a guarantee."
        )
    return (
        head + what + " exactly_once commits the offsets in the batch's own transaction, so it "
        "has no such window."
    )
