"""The database sink with Avro records through a real Apicurio registry and a real broker.

Decoded records are written in the batch's transaction and a poison record is dead-lettered with
its raw bytes; a registry that does not answer is waited for (nothing written, no position
moved), and a stop during that wait ends the run at once, normally.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from sdk.consumer import ConsumerRecord
from sdk.schemas import avro_deserializer
from sdk.sink import DatabaseSink, Transaction, sqlite
from sdk.testing.registry import SchemaRegistryServer
from tests.sdk.consumer._support import profile, read_topic
from tests.sdk.schemas._front_ends import NOT_FRAMED, UNKNOWN_ID, cold_reader, seed_avro_with_poison

pytestmark = [pytest.mark.broker, pytest.mark.registry]


def _database(path: Path) -> Any:
    database = sqlite(str(path))
    session = database.session()
    session.transaction.cursor.execute("CREATE TABLE orders (id INTEGER)")
    session.connection.commit()
    session.close()
    return database


def _ids(path: Path) -> list[int]:
    import sqlite3

    with sqlite3.connect(path) as db:
        return [row[0] for row in db.execute("SELECT id FROM orders ORDER BY rowid")]


def _next_offsets(path: Path) -> list[Any]:
    """The positions table's next offsets (a partition the sink claimed: a row, None until a
    batch commits)."""
    import sqlite3

    with sqlite3.connect(path) as db:
        return [row[0] for row in db.execute("SELECT next_offset FROM kafka_sink_positions")]


def write(record: ConsumerRecord, tx: Transaction) -> None:
    tx.execute("INSERT INTO orders (id) VALUES (?)", (record.value["id"],))


def test_avro_records_are_written_and_poison_is_dead_lettered(
    tmp_path: Path, kafka_cluster: Any, make_topic: Any, make_group: Any, schema_registry: str
) -> None:
    bs, topic, dlq = kafka_cluster.bootstrap_servers, make_topic(1), make_topic(1)
    seed_avro_with_poison(bs, topic, schema_registry)
    path = tmp_path / "out.db"
    prof = profile(
        bs,
        "exactly_once",
        make_group(),
        failure={"on_failure": "dlq", "dlq_topic": dlq, "backoff_initial_ms": 0},
    )
    deserializer = avro_deserializer(cold_reader(schema_registry))
    with DatabaseSink(prof, [topic], _database(path), value_deserializer=deserializer) as sink:
        stats = sink.run(write, max_records=6, idle_timeout_s=30)
    assert _ids(path) == [0, 1, 2, 3]
    assert (stats.deserialization_failures, stats.dead_lettered) == (2, 2)
    assert [m.value() for m in read_topic(bs, dlq, 2)] == [NOT_FRAMED, UNKNOWN_ID]


def test_a_stop_while_the_registry_is_down_ends_the_run_writing_nothing(
    tmp_path: Path,
    kafka_cluster: Any,
    make_topic: Any,
    make_group: Any,
    schema_registry: str,
    schema_registry_server: SchemaRegistryServer,
) -> None:
    bs, topic = kafka_cluster.bootstrap_servers, make_topic(1)
    seed_avro_with_poison(bs, topic, schema_registry)
    path = tmp_path / "out.db"
    prof = profile(bs, "exactly_once", make_group())
    reader = cold_reader(schema_registry, registry_timeout_s=120)
    sink = DatabaseSink(
        prof, [topic], _database(path), value_deserializer=avro_deserializer(reader)
    )
    schema_registry_server.stop()
    try:
        timer = threading.Timer(8, sink.stop)  # the group join first, then a few retries
        timer.start()
        started = time.monotonic()
        stats = sink.run(write, idle_timeout_s=60)
        took = time.monotonic() - started
    finally:
        timer.cancel()
        sink.close()
        schema_registry_server.start()
    assert took < 20  # the stop, not registry_timeout_s (120 s) nor the idle timeout
    assert stats.registry_retries >= 1
    assert (stats.deserialization_failures, stats.dead_lettered) == (0, 0)
    assert _ids(path) == []  # nothing written
    assert _next_offsets(path) in ([], [None])  # no position moved (the claim's row at most)
