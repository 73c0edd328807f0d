"""A member frozen (SIGSTOP) *inside* its batch transaction, while another member runs.

PostgreSQL: after ``executemany``, ``execute`` or the asyncio sink's ``executemany``, the
server ends the frozen session once its transaction has been open for
``transaction_timeout_s``; inside an open ``COPY`` it does not (a backend waiting for COPY data
handles no timeout), and ``end_frozen_holders`` ends it instead. The member that took its
partitions waits in ``lock_timeout`` steps, names the frozen session while it waits, and
commits on those partitions within the bound plus one lock step plus a margin. When the frozen
member wakes, its commit is refused and it counts itself fenced. SQLite keeps its documented
stall: nobody writes until the frozen process resumes. Every case ends with each input record
in the table once,
compared with the topic as kafka-python reads it.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from sdk.sink import postgresql
from tests.sdk.consumer._support import ROOT
from tests.sdk.sink._kills import FETCH, PARTS, read_input, seed, until

pytestmark = pytest.mark.broker

RECORDS = 3_000
BOUND_S = 8.0  # transaction_timeout_s
LOCK_S = 1.0  # lock_timeout_s: the new owner's claim fails and retries in these steps
IDLE_S = 60.0  # idle_in_transaction_timeout_s far above the bound: the bound is what acts
MARGIN_S = 5.0  # the group's rebalance is inside the bound (session timeout 6 s < 8 s)
# frozen for longer than the bound the test asserts (bound + lock step + margin = 14 s): a
# first commit only after the wake-up must fail the bound, not pass because the member woke
FROZEN_S = BOUND_S + LOCK_S + MARGIN_S + 1.0
OUT = "CREATE TABLE out (part INTEGER NOT NULL, off BIGINT NOT NULL, value BIGINT NOT NULL)"


class Worker:
    def __init__(self, wid: str, args: dict[str, Any], control: Path) -> None:
        self.wid = wid
        self.control = control
        self.log = control / f"log-{wid}.txt"
        with self.log.open("wb") as log:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "tests.sdk.sink.freeze_worker", json.dumps(args)],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdout=log,
                stderr=subprocess.STDOUT,
            )

    def stats(self) -> dict[str, Any]:
        try:
            data: dict[str, Any] = json.loads((self.control / f"stats-{self.wid}.json").read_text())
        except (OSError, ValueError):
            return {}
        return data

    def stopped(self) -> bool:
        stat = Path(f"/proc/{self.popen.pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] == "T"

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
        except OSError:
            return "(no log)"


class Table:
    """The output table and the positions, read by SQL outside the sink."""

    def __init__(self, kind: str, target: str) -> None:
        self.kind = kind
        self.target = target

    def query(self, sql: str, params: Any = ()) -> list[Any]:
        if self.kind == "postgresql":
            with psycopg.connect(self.target, autocommit=True) as db:
                return db.execute(sql.replace("?", "%s"), params).fetchall()
        db = sqlite3.connect(self.target, timeout=30)
        try:
            return db.execute(sql, params).fetchall()
        finally:
            db.close()

    def positions(self, group: str) -> dict[int, tuple[int | None, int]]:
        rows = self.query(
            "SELECT kafka_partition, next_offset, epoch FROM kafka_sink_positions "
            "WHERE group_id = ?",
            (group,),
        )
        return {int(p): (n, int(e)) for p, n, e in rows}

    def rows(self) -> list[tuple[int, int, int]]:
        return [(int(p), int(o), int(v)) for p, o, v in self.query("SELECT * FROM out")]


def freeze_run(
    tmp_path: Path,
    bootstrap: str,
    topic: str,
    group: str,
    table: Table,
    db_args: dict[str, Any],
    *,
    write: str = "executemany",
    use_asyncio: bool = False,
    end_frozen_holders: bool = False,
    frozen_for_s: float = FROZEN_S,
) -> dict[str, Any]:
    """Run the scenario; return what was measured (times in seconds from the freeze)."""
    base = {
        "bootstrap": bootstrap,
        "topic": topic,
        "group": group,
        "dir": str(tmp_path),
        "batch_size": 20,
        "delay_s": 0.2,
        "extras": FETCH,
        "write": write,
        "asyncio": use_asyncio,
        "end_frozen_holders": end_frozen_holders,
        **db_args,
    }
    workers: list[Worker] = []

    def start(wid: str) -> Worker:
        worker = Worker(wid, {**base, "wid": wid}, tmp_path)
        workers.append(worker)
        return worker

    def alive() -> None:
        for w in workers:
            assert w.alive(), f"{w.wid} exited ({w.popen.returncode}):\n{w.tail()}"

    def working(w: Worker) -> Callable[[], bool]:
        def check() -> bool:
            alive()
            return int(w.stats().get("transactions", 0)) >= 1

        return check

    try:
        frozen = start("frozen")
        until(working(frozen), 60, lambda: f"frozen's first commit\n{frozen.tail()}", 0.1)
        live = start("live")
        until(working(live), 60, lambda: f"live's first commit\n{live.tail()}", 0.1)
        (tmp_path / "freeze-frozen").write_text("")
        report = tmp_path / "frozen-frozen.json"
        until(lambda: report.exists() and frozen.stopped(), 30, lambda: "the freeze", 0.05)
        info = json.loads(report.read_text())
        at_freeze = table.positions(group)
        parts = [p for p in info["partitions"] if p in at_freeze]
        assert parts, f"the frozen batch's partitions {info['partitions']} have no rows"
        rows_at_freeze = len(table.rows())

        def taken_over() -> bool:
            now = table.positions(group)
            return all(
                now[p][1] > at_freeze[p][1]
                and now[p][0] is not None
                and (at_freeze[p][0] is None or now[p][0] > at_freeze[p][0])  # type: ignore[operator]
                for p in parts
            )

        first_commit: float | None = None
        wake_at = info["time"] + frozen_for_s
        while time.time() < wake_at:
            assert live.alive(), live.tail()
            if first_commit is None and taken_over():
                first_commit = time.time() - info["time"]
            time.sleep(0.1)
        rows_before_wake = len(table.rows())
        os.kill(frozen.popen.pid, signal.SIGCONT)
        woke = time.time()
        if first_commit is None:  # stalled through the freeze (SQLite)
            until(taken_over, 60, lambda: f"a commit on {parts}\n{live.tail()}", 0.1)
            first_commit = time.time() - info["time"]
        after_wake = time.time() - woke
        until(
            lambda: int(frozen.stats().get("fenced", 0)) >= 1 or table.kind == "sqlite",
            30,
            lambda: f"the woken member fenced: {frozen.stats()}\n{frozen.tail()}",
            0.1,
        )
        (tmp_path / "fast").write_text("")
        until(
            lambda: sum(n or 0 for n, _ in table.positions(group).values()) >= RECORDS,
            120,
            lambda: f"every record committed: {table.positions(group)}",
            0.2,
        )
        for w in workers:
            if w.alive():
                w.popen.send_signal(signal.SIGTERM)
        for w in workers:
            w.popen.wait(60)
        return {
            "first_commit_s": first_commit,
            "after_wake_s": after_wake,
            "rows_at_freeze": rows_at_freeze,
            "rows_before_wake": rows_before_wake,
            "frozen": frozen.stats(),
            "live": live.stats(),
            "frozen_log": frozen.tail(),
            "frozen_pid": int(info["pid"]),
        }
    finally:
        for w in workers:
            if w.alive():
                os.kill(w.popen.pid, signal.SIGCONT)
                w.popen.kill()
                w.popen.wait(10)


def assert_exactly_once(table: Table, bootstrap: str, topic: str) -> None:
    expected = sorted(read_input(bootstrap, topic))  # kafka-python, not the SDK
    assert len(expected) == RECORDS
    got = sorted(table.rows())
    lost = set(expected) - set(got)
    duplicated = len(got) - len(set(got))
    assert (len(lost), duplicated) == (0, 0), f"lost {len(lost)}, duplicated {duplicated}"
    assert got == expected


@pytest.fixture
def scene(kafka_cluster: Any, make_topic: Any, make_group: Any) -> Iterator[tuple[str, str, str]]:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = make_topic(PARTS)
    seed(bootstrap, topic, RECORDS)
    yield bootstrap, topic, make_group()


@pytest.fixture
def pg(postgres_uri: str) -> tuple[Table, dict[str, Any]]:
    with psycopg.connect(postgres_uri, autocommit=True) as db:
        db.execute(OUT)
    postgresql(postgres_uri).session().close()  # the positions table, before two sinks race
    args = {
        "database": "postgresql",
        "uri": postgres_uri,
        "transaction_timeout_s": BOUND_S,
        "idle_in_transaction_timeout_s": IDLE_S,
        "lock_timeout_s": LOCK_S,
    }
    return Table("postgresql", postgres_uri), args


@pytest.mark.postgres
@pytest.mark.parametrize(
    ("write", "use_asyncio", "end_frozen_holders"),
    [
        ("executemany", False, False),
        ("execute", False, False),
        ("copy", False, True),
        ("executemany", True, False),
    ],
    ids=["executemany", "execute", "copy-end_frozen_holders", "asyncio-executemany"],
)
def test_postgresql_bounds_a_member_frozen_inside_its_transaction(
    tmp_path: Path,
    scene: tuple[str, str, str],
    pg: tuple[Table, dict[str, Any]],
    write: str,
    use_asyncio: bool,
    end_frozen_holders: bool,
) -> None:
    bootstrap, topic, group = scene
    table, args = pg
    m = freeze_run(
        tmp_path,
        bootstrap,
        topic,
        group,
        table,
        args,
        write=write,
        use_asyncio=use_asyncio,
        end_frozen_holders=end_frozen_holders,
    )
    print(
        f"freeze ({write}, asyncio={use_asyncio}) -> new owner's first commit: "
        f"{m['first_commit_s']:.1f}s; live {m['live']}; frozen {m['frozen']}"
    )
    # the new owner committed on the frozen member's partitions while it was still frozen,
    # within the bound, one lock step and a margin
    assert m["first_commit_s"] <= BOUND_S + LOCK_S + MARGIN_S, m
    assert m["first_commit_s"] < FROZEN_S  # before the wake-up
    # while it waited, it named the frozen session: its application_name, set by the sink,
    # ends with the frozen process's host:pid
    assert m["live"]["lock_waits"] >= 1, m["live"]
    assert f":{m['frozen_pid']};" in m["live"]["blocked_by"], m["live"]["blocked_by"]
    assert "ksem-sink " + group in m["live"]["blocked_by"]
    # the woken member's commit was refused: fenced
    assert m["frozen"]["fenced"] >= 1, m["frozen_log"]
    assert m["live"]["holders_ended"] == (1 if end_frozen_holders else 0), m["live"]
    assert m["frozen"]["error"] is None and m["live"]["error"] is None
    assert_exactly_once(table, bootstrap, topic)


def test_sqlite_stalls_until_the_frozen_member_resumes(
    tmp_path: Path, scene: tuple[str, str, str]
) -> None:
    bootstrap, topic, group = scene
    path = str(tmp_path / "sink.db")
    db = sqlite3.connect(path)
    db.execute(OUT)
    db.commit()
    db.close()
    table = Table("sqlite", path)
    frozen_for = 12.0
    m = freeze_run(
        tmp_path,
        bootstrap,
        topic,
        group,
        table,
        # paced outside the transactions (gap_s), so that the two members share the lock
        {"database": "sqlite", "path": path, "busy_timeout_s": 30.0, "delay_s": 0.0, "gap_s": 0.2},
        frozen_for_s=frozen_for,
    )
    print(
        f"SQLite freeze of {frozen_for}s -> new owner's first commit at "
        f"{m['first_commit_s']:.1f}s ({m['after_wake_s']:.1f}s after the wake-up)"
    )
    # nobody wrote while the frozen process held the write lock: the documented stall
    assert m["rows_before_wake"] == m["rows_at_freeze"], m
    assert m["first_commit_s"] >= frozen_for, m
    assert m["frozen"]["error"] is None and m["live"]["error"] is None
    assert_exactly_once(table, bootstrap, topic)
