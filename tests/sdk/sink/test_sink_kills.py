"""Kill tests of the database sink: worker processes SIGKILLed inside transactions, a zombie.

Two or three processes run :class:`sdk.sink.DatabaseSink` into one database (PostgreSQL, or
one SQLite file in WAL mode) and plain INSERT each record (no unique constraint). During the
run (tests/sdk/sink/_kills.py): SIGKILLs shown to land inside a database transaction, a member
joining, made a zombie (SIGSTOPped between transactions with a batch in hand until another
member committed past that batch) and leaving with SIGTERM, and (PostgreSQL) a server
crash-restart. Lost and duplicated records are counted by SQL against the topic as read by
kafka-python. ``exactly_once`` must lose and duplicate nothing and fence the zombie;
``at_least_once`` loses nothing, and its zombie writes its batch a second time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sdk.testing.postgres import PostgresServer
from tests.sdk.sink._kill_sides import PostgresSide, SqliteSide
from tests.sdk.sink._kills import (
    PARTS,
    Outcome,
    Scenario,
    run,
    seed,
)

pytestmark = pytest.mark.broker

SIZES = [20_000, pytest.param(100_000, marks=pytest.mark.slow)]


@pytest.fixture
def topic_of(kafka_cluster: Any, make_topic: Any, make_group: Any) -> Any:
    def factory(records: int) -> tuple[str, str, str]:
        bs = kafka_cluster.bootstrap_servers
        topic = make_topic(PARTS)
        seed(bs, topic, records)
        return bs, topic, make_group()

    return factory


def check_exactly_once(outcome: Outcome) -> None:
    assert outcome.input_records == outcome.scenario.records
    assert outcome.lost == 0, f"{outcome.lost} records have no output row"
    assert outcome.duplicated == 0, f"{outcome.duplicated} records have more than one row"
    assert outcome.misplaced == 0, f"{outcome.misplaced} rows do not match their input record"
    assert outcome.kills_inside >= 3, outcome.kills
    assert outcome.held and outcome.zombie_stats.get("fenced", 0) >= 1, outcome.zombie_stats
    assert outcome.left_cleanly


@pytest.mark.postgres
@pytest.mark.parametrize("records", SIZES)
def test_postgresql_exactly_once_through_kills_a_zombie_and_a_restart(
    records: int, topic_of: Any, postgres: PostgresServer, postgres_uri: str, tmp_path: Path
) -> None:
    bs, topic, group = topic_of(records)
    scenario = Scenario("postgresql", "exactly_once", records, delay_s=0.05)

    def restart() -> None:
        postgres.restart("immediate")

    outcome = run(scenario, PostgresSide(postgres_uri), bs, topic, group, tmp_path, restart)
    check_exactly_once(outcome)
    assert outcome.restarted_database
    assert outcome.totals["database_retries"] >= 1


@pytest.mark.parametrize("records", SIZES)
def test_sqlite_exactly_once_through_kills_and_a_zombie(
    records: int, topic_of: Any, tmp_path: Path
) -> None:
    bs, topic, group = topic_of(records)
    scenario = Scenario("sqlite", "exactly_once", records, delay_s=0.03, gap_s=0.03)
    outcome = run(scenario, SqliteSide(tmp_path / "out.db"), bs, topic, group, tmp_path)
    check_exactly_once(outcome)


@pytest.mark.postgres
def test_postgresql_at_least_once_loses_nothing_and_duplicates_the_zombies_batch(
    topic_of: Any, postgres: PostgresServer, postgres_uri: str, tmp_path: Path
) -> None:
    records = 20_000
    bs, topic, group = topic_of(records)
    scenario = Scenario("postgresql", "at_least_once", records, delay_s=0.05)

    def restart() -> None:
        postgres.restart("immediate")

    outcome = run(scenario, PostgresSide(postgres_uri), bs, topic, group, tmp_path, restart)
    assert outcome.lost == 0, f"{outcome.lost} records have no output row"
    assert outcome.misplaced == 0
    assert outcome.kills_inside >= 3, outcome.kills
    # deterministic: the zombie wrote its held batch after another member had written it
    assert outcome.held_duplicated == len(outcome.held) > 0
    assert outcome.duplicated >= outcome.held_duplicated
