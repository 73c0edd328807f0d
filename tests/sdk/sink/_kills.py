"""The sink's kill scenario, shared by the PostgreSQL and SQLite kill tests.

Worker processes (``tests.sdk.sink.sink_worker``) run :class:`sdk.sink.DatabaseSink` into one
database and plain INSERT each record into ``out`` (no unique constraint). Over the first half
of the records, each step once a share of them is committed: SIGKILLs shown to land inside a
database transaction (the killed member restarts under its static ``group.instance.id``), a
member joining, that member made a zombie (SIGSTOPped between transactions with a batch in
hand, kept stopped past the session timeout until another member committed past its batch,
then SIGCONTed) and leaving with SIGTERM, and a PostgreSQL ``restart("immediate")``. Then the
workers finish without their pacing sleep, the topic is read by kafka-python (not the SDK)
into the table ``input``, and SQL counts the values with no row in ``out`` (lost) and with
more than one (duplicated).
"""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import psycopg

from tests.sdk.consumer._support import wait_for
from tests.sdk.sink._kill_sides import IDLE_IN_TRANSACTION_S, Kill, Side
from tests.sdk.sink._kill_workers import Proc, Workers

PARTS = 6
SESSION_TIMEOUT_S = 6.0  # tests.sdk.consumer._support.profile's session_timeout_ms
Backend = Literal["postgresql", "sqlite"]


@dataclass(frozen=True)
class Scenario:
    """One run's shape.

    Attributes:
        backend: ``postgresql`` or ``sqlite`` (several processes on one WAL file).
        guarantee: The workers' profile guarantee.
        records: Records in the topic.
        delay_s: The handler's sleep inside each transaction until the disruptions are over:
            it paces the run so that records are left for every disruption, and is what a
            kill has to land in.
        gap_s: The workers' pause between a poll and its transaction, outside it, until the
            disruptions are over (SQLite: lets the other writers take the write lock).
        kills: SIGKILLs that must be shown to land inside a transaction.
    """

    backend: Backend
    guarantee: Literal["exactly_once", "at_least_once"]
    records: int
    delay_s: float
    gap_s: float = 0.0
    kills: int = 3

    @property
    def batch_size(self) -> int:
        return max(10, self.records // 2_000)


@dataclass
class Outcome:
    """What a scenario run measured."""

    scenario: Scenario
    kills: list[Kill] = field(default_factory=list)
    zombie: str = ""
    held: list[list[int]] = field(default_factory=list)  # the zombie's batch: [part, off, value]
    zombie_stats: dict[str, Any] = field(default_factory=dict)
    zombie_stopped_s: float = 0.0
    totals: dict[str, int] = field(default_factory=dict)  # summed over worker incarnations
    left_cleanly: bool = False
    restarted_database: bool = False
    input_records: int = 0
    lost: int = -1
    duplicated: int = -1  # values with more than one row in out
    duplicate_rows: int = -1  # rows beyond the first of each value
    misplaced: int = -1  # rows whose (partition, offset) is not the value's in the input
    held_duplicated: int = -1  # of the zombie's batch
    seconds: float = 0.0
    events: list[str] = field(default_factory=list)

    @property
    def kills_inside(self) -> int:
        return sum(1 for k in self.kills if k.inside)

    def summary(self) -> str:
        sc = self.scenario
        return (
            f"[{sc.backend} {sc.guarantee} N={sc.records}] records_in={self.input_records} "
            f"kills={len(self.kills)} kills_inside_txn={self.kills_inside} "
            f"zombie={self.zombie} held={len(self.held)} "
            f"zombie_stopped={self.zombie_stopped_s:.1f}s "
            f"zombie_fenced={self.zombie_stats.get('fenced')} "
            f"fenced_total={self.totals.get('fenced')} "
            f"database_retries={self.totals.get('database_retries')} "
            f"transactions={self.totals.get('transactions')} claims={self.totals.get('claims')} "
            f"lost={self.lost} duplicated={self.duplicated} duplicate_rows={self.duplicate_rows} "
            f"misplaced={self.misplaced} held_duplicated={self.held_duplicated} "
            f"wall={self.seconds:.1f}s"
        )


# ---------------------------------------------------------------------- the topic
def seed(bootstrap: str, topic: str, count: int) -> None:
    """Write records ``0..count-1``: key ``k<i % 97>``, value ``str(i)``, in small batches.

    Small producer batches and small fetches (``FETCH``) interleave the partitions in the
    workers' poll order, so paced workers advance every partition, not one after another.
    """
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "linger.ms": 5,
            "batch.size": 1_024,
        }
    )
    for i in range(count):
        while True:
            try:
                producer.produce(topic, key=f"k{i % 97}", value=str(i))
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0, f"seeding {topic}: records left undelivered"


FETCH = {"max.partition.fetch.bytes": 1_024}


# ---------------------------------------------------------------------- the independent reader
def read_input(bootstrap: str, topic: str, timeout: float = 120.0) -> list[tuple[int, int, int]]:
    """Every record of ``topic`` as (partition, offset, value), read by kafka-python."""
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, enable_auto_commit=False, auto_offset_reset="earliest"
    )
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTS)]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        ends = consumer.end_offsets(tps)
        out: list[tuple[int, int, int]] = []
        deadline = time.monotonic() + timeout
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, (
                f"kafka-python read {len(out)} records of {topic} in {timeout}s; end offsets {ends}"
            )
            for tp, records in consumer.poll(timeout_ms=500, max_records=5_000).items():
                out += [(tp.partition, r.offset, int(r.value)) for r in records]
        return out
    finally:
        consumer.close()


# ---------------------------------------------------------------------- the scenario
def until(check: Callable[[], Any], timeout: float, what: Callable[[], str], every: float) -> None:
    """Poll ``check`` until it is true; on timeout fail with ``what()`` (evaluated then)."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what()}")
        time.sleep(every)


def run(
    sc: Scenario,
    side: Side,
    bootstrap: str,
    topic: str,
    group: str,
    control: Path,
    restart_database: Callable[[], None] | None = None,
) -> Outcome:
    """Run ``sc`` on a seeded topic; the caller asserts on the returned outcome.

    Members ``a`` and ``b`` are static (a restart after a SIGKILL takes the dead member's
    place at once); ``c`` joins mid-run, is made the zombie, and leaves with SIGTERM once it
    has woken (fenced, under exactly_once).
    """
    started = time.monotonic()
    outcome = Outcome(sc)
    eos = sc.guarantee == "exactly_once"
    side.create_out()
    workers = Workers(
        {
            "bootstrap": bootstrap,
            "topic": topic,
            "group": group,
            "guarantee": sc.guarantee,
            "batch_size": sc.batch_size,
            "delay_s": sc.delay_s,
            "gap_s": sc.gap_s,
            "dir": str(control),
            "extras": FETCH,
            **side.worker_args(),
        },
        control,
    )

    def event(text: str) -> None:
        line = f"{time.monotonic() - started:6.1f}s {text}"
        outcome.events.append(line)
        print(f"[{sc.backend} {sc.guarantee} N={sc.records}] {line}", flush=True)

    def done() -> int:
        """Records committed: the positions (exactly_once), distinct output values (ALO)."""
        workers.check_alive()
        try:
            if eos:
                return sum(n or 0 for n, _ in side.positions(group).values())
            return side.distinct_values()
        except (psycopg.OperationalError, sqlite3.OperationalError):
            return -1  # the database is restarting

    def where() -> str:
        try:
            return f"{done()} committed; positions (next offset, epoch) {side.positions(group)}"
        except (psycopg.OperationalError, sqlite3.OperationalError) as exc:
            return f"(database unavailable: {exc})"

    def mid_run(step: str, share: float = 0.0) -> None:
        """Once ``share`` of the records are committed, check the run is still going."""
        until(
            lambda: done() >= share * sc.records,
            120,
            lambda: f"{share:.0%} of the records committed before {step} ({where()})",
            0.1,
        )
        left = sc.records - done()
        assert left > sc.records // 20, (
            f"only {left} of {sc.records} records were left before {step}: the run must still "
            f"be going; raise delay_s"
        )
        event(f"{step} ({sc.records - left} committed)")

    def kill_one(share: float) -> None:
        mid_run(f"kill #{len(outcome.kills) + 1}", share)
        kill = side.kill_inside(workers, sc.delay_s, 60)
        outcome.kills.append(kill)
        victim = next(p for p in workers.live.values() if p.wid == kill.wid)
        victim.popen.wait(10)
        side.after_kill(kill)
        event(
            f"SIGKILL {kill.wid} ({kill.observed}, {kill.age_s * 1000:.1f} ms into it, "
            f"kill {kill.latency_s * 1000:.1f} ms after the look; inside={kill.inside})"
        )
        workers.wait_working(workers.start(victim.name, static=True))

    try:
        a = workers.start("a", static=True)
        b = workers.start("b", static=True)
        workers.wait_working(a)
        workers.wait_working(b)
        # the disruptions are spread over the first half of the records
        kill_one(0.05)
        mid_run("member c joins", 0.10)
        c = workers.start("c", static=False)
        workers.wait_working(c)
        kill_one(0.15)
        zombie(sc, side, c, workers, outcome, group, event, lambda step: mid_run(step, 0.20), eos)
        # The zombie leaves: under exactly_once its fenced partition is paused, and a paused
        # partition the group hands back to the same member is never resumed (a sink bug).
        mid_run(f"member {c.wid} leaves (SIGTERM)")
        code = c.terminate(30)
        del workers.live["c"]
        outcome.left_cleanly = code == 0 and c.stats().get("final") is True
        event(f"{c.wid} left: exit {code}, final stats {c.stats().get('final')}")
        kill_one(0.30)
        if restart_database is not None:
            mid_run("PostgreSQL restart (immediate)", 0.40)
            before = done()
            restart_database()
            outcome.restarted_database = True
            until(
                lambda: done() > before + sc.batch_size * 3,
                90,
                lambda: f"the sink to commit again after the PostgreSQL restart ({where()})",
                0.2,
            )
            event(f"committing again after the restart ({done()} committed)")
        while outcome.kills_inside < sc.kills:
            assert len(outcome.kills) < sc.kills + 3, f"kills not shown inside: {outcome.kills}"
            kill_one(0.45)
        (control / "fast").touch()  # the disruptions are over: the workers drop their sleep
        until(
            lambda: done() >= sc.records,
            120 + sc.records / 500,
            lambda: f"all {sc.records} records committed ({where()})",
            0.2,
        )
        event("all records committed; stopping the workers (SIGTERM)")
        for proc in list(workers.live.values()):
            code = proc.terminate(60)
            assert code == 0, f"worker {proc.wid} exited {code}:\n{proc.tail()}"
            assert proc.stats().get("final") is True, f"{proc.wid} wrote no final stats"
        workers.live.clear()
    except BaseException:
        print(workers.tails(), flush=True)
        raise
    finally:
        workers.kill_all()
    outcome.totals = workers.totals()
    inputs = read_input(bootstrap, topic)
    counts = side.load_and_count(inputs)
    outcome.input_records = counts["input"]
    assert counts["input"] == counts["input_distinct"] == sc.records, counts
    outcome.lost = counts["lost"]
    outcome.duplicated = counts["duplicated"]
    outcome.duplicate_rows = counts["duplicate_rows"]
    outcome.misplaced = counts["misplaced"]
    held_values = [v for _, _, v in outcome.held]
    outcome.held_duplicated = sum(1 for c in side.rows_per_value(held_values).values() if c > 1)
    side.close()
    outcome.seconds = time.monotonic() - started
    event(outcome.summary())
    return outcome


def zombie(
    sc: Scenario,
    side: Side,
    proc: Proc,
    workers: Workers,
    outcome: Outcome,
    group: str,
    event: Callable[[str], None],
    mid_run: Callable[[str], None],
    eos: bool,
) -> None:
    """Freeze ``proc`` between transactions with a batch in hand; wake it once replaced."""
    mid_run(f"zombie {proc.wid}: hold its next polled batch")
    outcome.zombie = proc.wid
    control = proc.control
    (control / f"hold-{proc.wid}").touch()
    held_file = control / f"held-{proc.wid}.json"
    wait_for(held_file.exists, 60, f"worker {proc.wid} to hold a polled batch", 0.02)
    held: list[list[int]] = json.loads(held_file.read_text())["records"]
    before = proc.stats()
    how = side.freeze(proc)
    stopped_at = time.monotonic()
    (control / f"release-{proc.wid}").touch()  # it goes on with the batch once continued
    outcome.held = held
    ends: dict[int, int] = {}
    for part, off, _ in held:
        ends[part] = max(ends.get(part, -1), off + 1)
    epochs = {p: e for p, (_, e) in side.positions(group).items() if p in ends}
    event(f"SIGSTOP {proc.wid} with {len(held)} records of partitions {sorted(ends)} ({how})")
    values = [v for _, _, v in held]
    claimed = False

    def replaced() -> bool:
        nonlocal claimed
        workers.check_alive()
        if eos:  # another member claimed the partitions and committed past the held batch
            now = side.positions(group)
            if not claimed and any(now[p][1] != e for p, e in epochs.items()):
                claimed = True
                event(f"{proc.wid}'s partitions claimed again: {now}")
            return all((now[p][0] or 0) >= end for p, end in ends.items())
        return len(side.rows_per_value(values)) == len(values)  # ALO: written by another

    until(
        replaced,
        90,
        lambda: (
            f"another member to commit past the batch held by {proc.wid} "
            f"(held ends {ends}, positions {side.positions(group)})"
        ),
        0.2,
    )
    # past the session timeout (the group dropped it) and the server's idle-in-transaction
    # timeout, whichever took longer than the takeover itself
    rest = max(SESSION_TIMEOUT_S, IDLE_IN_TRANSACTION_S) + 1 - (time.monotonic() - stopped_at)
    if rest > 0:
        time.sleep(rest)
    after = {p: e for p, (_, e) in side.positions(group).items() if p in ends}
    outcome.zombie_stopped_s = time.monotonic() - stopped_at
    proc.signal(signal.SIGCONT)
    event(
        f"SIGCONT {proc.wid} after {outcome.zombie_stopped_s:.1f}s; epochs of its "
        f"partitions {epochs} -> {after}"
    )
    if eos:
        until(
            lambda: proc.stats().get("fenced", 0) > before.get("fenced", 0),
            60,
            lambda: f"the zombie {proc.wid} to be fenced (its counters: {proc.stats()})",
            0.1,
        )
    else:
        until(
            lambda: all(c >= 2 for c in side.rows_per_value(values).values()),
            60,
            lambda: (
                f"the zombie {proc.wid} to write its held batch a second time "
                f"(rows per value: {side.rows_per_value(values)})"
            ),
            0.1,
        )
    outcome.zombie_stats = proc.stats()
    event(f"zombie {proc.wid} after waking: {outcome.zombie_stats}")
