"""The sink has what every front end has: telemetry and verify_cluster (issue 47)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sdk.errors import DoctorError
from sdk.observability._conventions import METRIC_PROCESS_DURATION, METRIC_REBALANCES
from sdk.sink import DatabaseSink, Transaction, sqlite
from tests.sdk.consumer._support import profile, seed
from tests.sdk.observability._support import make_otel

pytestmark = pytest.mark.broker


def write(records: list[Any], tx: Transaction) -> None:
    tx.executemany("INSERT INTO out (value) VALUES (?)", [(r.value,) for r in records])


def test_a_span_per_batch_transaction_and_the_consumer_metrics(
    tmp_path: Path, kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    topic = make_topic(2)
    seed(bootstrap, topic, 300)
    database = sqlite(str(tmp_path / "out.db"))
    session = database.session()
    session.transaction.cursor.execute("CREATE TABLE out (value BLOB)")
    session.connection.commit()
    session.close()
    otel = make_otel()
    prof = profile(bootstrap, "exactly_once", make_group(), batch_size=100)
    with DatabaseSink(prof, [topic], database, telemetry=otel.telemetry) as sink:
        stats = sink.run_batch(write, max_records=300, idle_timeout_s=10)
    spans = otel.spans(f"process {topic}")
    assert len(spans) == stats.transactions >= 3
    assert sum(s.attributes["messaging.batch.message_count"] for s in spans) == 300
    assert otel.total(METRIC_PROCESS_DURATION) == stats.transactions
    assert otel.total(METRIC_REBALANCES, {"kafka_semantics.rebalance.kind": "assigned"}) >= 1


def test_verify_cluster_refuses_a_failing_cluster_before_any_client(
    tmp_path: Path, kafka_cluster: Any, make_topic: Any, make_group: Any
) -> None:
    topic = make_topic(1, config={"unclean.leader.election.enable": "true"})
    prof = profile(kafka_cluster.bootstrap_servers, "exactly_once", make_group())
    sink = DatabaseSink(prof, [topic], sqlite(str(tmp_path / "out.db")), verify_cluster=True)
    with pytest.raises(DoctorError) as info:
        sink.run_batch(write, idle_timeout_s=5)
    assert info.value.checks == [f"topic {topic}: unclean leader election"]
    assert sink._loop.client is None  # refused before any client connected
    assert not (tmp_path / "out.db").exists()  # nor the database
    sink.close()
