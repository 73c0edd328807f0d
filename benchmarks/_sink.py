"""Database sink cases: DatabaseSink exactly_once, a hand-written loop, the at-least-once Consumer.

Each case reads the same pre-filled 4-partition topic from the beginning with a new group and
writes every record, ``(partition, offset, value)``, into a fresh table of one PostgreSQL
server, :data:`BATCH` records per polled batch, with the same psycopg ``executemany`` INSERT:

- ``DatabaseSink`` exactly_once: ``run_batch``; the batch's rows and its positions (a
  conditional UPDATE per partition) in one transaction, then an asynchronous Kafka commit;
- the hand-written loop a competent user writes: ``consume(BATCH)``, the INSERT and an upsert
  of an offsets row per partition in one transaction, resuming from that table at assignment;
- the SDK ``Consumer`` at_least_once: ``run_batch`` whose handler inserts and commits its own
  transaction (no offsets row).

The clock starts at the first record and stops when the last batch committed. Client CPU per
record is this process's CPU time (every thread) from building the clients to the end of the
loop, without their close. After each case the table must hold exactly the N records, each
(partition, offset) once, or the run fails.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Iterator
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer

from benchmarks import _harness
from benchmarks._harness import Result, progress
from sdk.consumer import Consumer as SdkConsumer
from sdk.profiles import ConsumerProfile, Guarantee
from sdk.sink import DatabaseSink, Transaction, postgresql

GROUP = "sink"
BATCH = 500
"""Records per polled batch, and so per transaction, in every case."""

SINK = "SDK DatabaseSink exactly_once"
HAND_WRITTEN = "hand-written confluent-kafka + psycopg EOS loop"
AT_LEAST_ONCE = "SDK Consumer at_least_once run_batch + psycopg"

_INSERT = "INSERT INTO {table} (part, off, value) VALUES (%s, %s, %s)"


@contextlib.contextmanager
def postgres(enabled: bool) -> Iterator[str | None]:
    """Yield the URI of a fresh database on a PostgreSQL server of the run (None: not enabled)."""
    if not enabled:
        yield None
        return
    from sdk.testing.postgres import PostgresServer

    progress("starting PostgreSQL ...")
    server = PostgresServer()
    server.start()
    try:
        yield server.create_database("bench")
    finally:
        server.stop()


def _profile(bootstrap: str, guarantee: Guarantee) -> ConsumerProfile:
    return ConsumerProfile(
        guarantee=guarantee,
        bootstrap_servers=bootstrap,
        group_id=f"bench-{uuid.uuid4().hex[:8]}",
        batch_size=BATCH,
        **_harness.sdk_consumer_fields(),
    )


def _connect(uri: str, *, autocommit: bool = False) -> Any:
    import psycopg  # the testing extra: only the sink group needs it

    return psycopg.connect(uri, autocommit=autocommit)


def _new_table(uri: str) -> str:
    name = f"out_{uuid.uuid4().hex[:10]}"
    with _connect(uri, autocommit=True) as db:
        db.execute(f"CREATE TABLE {name} (part INT NOT NULL, off BIGINT NOT NULL, value BYTEA)")
    return name


def _check_and_drop(uri: str, n: int, table: str, *others: str) -> None:
    """Fail unless ``table`` holds each of the N records once; drop it and ``others``.

    Raises:
        RuntimeError: Records missing or duplicated.
    """
    with _connect(uri, autocommit=True) as db:
        row = db.execute(f"SELECT count(*), count(DISTINCT (part, off)) FROM {table}").fetchone()
        for name in (table, *others):
            db.execute(f"DROP TABLE IF EXISTS {name}")
    rows, distinct = row or (0, 0)
    if rows != n or distinct != n:
        raise RuntimeError(f"{table}: {rows:,} rows, {distinct:,} distinct; expected {n:,}")


def _result(case: str, size: int, n: int, seconds: float, cpu_s: float, txns: int) -> Result:
    progress(f"    {case}: {n:,} rows verified, {txns:,} transactions")
    extra = {"client_cpu_us": cpu_s / n * 1e6, "transactions": txns}
    return Result(GROUP, case, size, n, seconds, extra=extra)


def sink(bootstrap: str, source: str, uri: str, n: int, size: int) -> Result:
    """``DatabaseSink`` exactly_once, ``run_batch`` with the INSERT."""
    table = _new_table(uri)
    positions = f"pos_{table}"
    insert = _INSERT.format(table=table)
    first = 0.0

    def write(records: list[Any], tx: Transaction) -> None:
        nonlocal first
        if not first:
            first = time.perf_counter()
        tx.executemany(insert, [(r.partition, r.offset, r.value) for r in records])

    cpu = time.process_time()
    database = postgresql(uri, positions_table=positions)
    with DatabaseSink(_profile(bootstrap, Guarantee.EXACTLY_ONCE), [source], database) as db_sink:
        stats = db_sink.run_batch(write, max_records=n)
        seconds = time.perf_counter() - first
        cpu = time.process_time() - cpu
    _check_and_drop(uri, n, table, positions)
    return _result(SINK, size, int(stats.handled), seconds, cpu, stats.transactions)


def hand_written(bootstrap: str, source: str, uri: str, n: int, size: int) -> Result:
    """The peer: confluent-kafka and psycopg, rows and offsets rows in one transaction per batch.

    The consumer gets the SDK exactly_once profile's rendered settings, so only the loop
    differs; it resumes from its offsets table, read at assignment.
    """
    table = _new_table(uri)
    offsets = f"offsets_{table}"
    profile = _profile(bootstrap, Guarantee.EXACTLY_ONCE)
    group = profile.group_id
    config = _harness.raw_consumer_config(dict(profile.render()))
    with _connect(uri, autocommit=True) as admin:
        admin.execute(
            f"CREATE TABLE {offsets} (group_id TEXT, topic TEXT, part INT, next_offset BIGINT,"
            " PRIMARY KEY (group_id, topic, part))"
        )
    insert = _INSERT.format(table=table)
    upsert = (
        f"INSERT INTO {offsets} (group_id, topic, part, next_offset) VALUES (%s, %s, %s, %s)"
        " ON CONFLICT (group_id, topic, part) DO UPDATE SET next_offset = EXCLUDED.next_offset"
    )
    cpu = time.process_time()
    db = _connect(uri)
    cursor = db.cursor()
    consumer = Consumer(config)

    def on_assign(c: Any, partitions: list[Any]) -> None:
        rows = cursor.execute(
            f"SELECT topic, part, next_offset FROM {offsets} WHERE group_id = %s", (group,)
        ).fetchall()
        db.rollback()
        stored = {(t, p): o for t, p, o in rows}
        for tp in partitions:
            tp.offset = stored.get((tp.topic, tp.partition), OFFSET_BEGINNING)
        c.assign(partitions)

    consumer.subscribe([source], on_assign=on_assign)
    seen, first, txns = 0, 0.0, 0
    while seen < n:
        msgs: list[Any] = consumer.consume(BATCH, 1.0)
        if not msgs:
            continue
        if not first:
            first = time.perf_counter()
        rows = []
        ends = {}
        for m in msgs:
            if m.error() is None:
                rows.append((m.partition(), m.offset(), m.value()))
                ends[(m.topic(), m.partition())] = m.offset() + 1
        if not rows:
            continue
        cursor.executemany(insert, rows)
        cursor.executemany(upsert, [(group, t, p, o) for (t, p), o in ends.items()])
        db.commit()
        txns += 1
        seen += len(rows)
    seconds = time.perf_counter() - first
    cpu = time.process_time() - cpu
    consumer.close()
    db.close()
    _check_and_drop(uri, n, table, offsets)
    return _result(HAND_WRITTEN, size, seen, seconds, cpu, txns)


def at_least_once(bootstrap: str, source: str, uri: str, n: int, size: int) -> Result:
    """The SDK ``Consumer`` at_least_once: the handler inserts and commits its transaction."""
    table = _new_table(uri)
    insert = _INSERT.format(table=table)
    first, txns = 0.0, 0
    cpu = time.process_time()
    db = _connect(uri)
    cursor = db.cursor()

    def write(records: list[Any]) -> None:
        nonlocal first, txns
        if not first:
            first = time.perf_counter()
        cursor.executemany(insert, [(r.partition, r.offset, r.value) for r in records])
        db.commit()
        txns += 1

    with SdkConsumer(_profile(bootstrap, Guarantee.AT_LEAST_ONCE), [source]) as consumer:
        stats = consumer.run_batch(write, max_records=n)
        # run_batch returns after its final offset commit; close() is not counted
        seconds = time.perf_counter() - first
        cpu = time.process_time() - cpu
    db.close()
    _check_and_drop(uri, n, table)
    return _result(AT_LEAST_ONCE, size, int(stats.handled or n), seconds, cpu, txns)
