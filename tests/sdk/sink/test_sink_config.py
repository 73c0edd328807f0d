"""DatabaseSink refuses what cannot keep its guarantee, naming the field (no broker)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sdk.errors import ConfigurationError
from sdk.profiles import ConsumerProfile
from sdk.sink import Database, DatabaseSink, sqlite
from sdk.sink._connection import application_name


def prof(guarantee: str = "exactly_once", **kw: Any) -> ConsumerProfile:
    return ConsumerProfile(guarantee=guarantee, bootstrap_servers="x:1", group_id="g", **kw)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"profile": prof("at_most_once")}, "guarantee"),
        ({"topics": []}, "topics"),
        ({"database": "sqlite:///x.db"}, "database"),
        ({"first_start": "latest"}, "first_start"),
        ({"profile": prof(auto_offset_reset="error"), "first_start": "reset"}, "first_start"),
    ],
)
def test_refused_with_the_field_named(tmp_path: Path, kwargs: dict[str, Any], field: str) -> None:
    args: dict[str, Any] = {
        "profile": prof(),
        "topics": ["t"],
        "database": sqlite(str(tmp_path / "x.db")),
    }
    args.update(kwargs)
    with pytest.raises(ConfigurationError) as err:
        DatabaseSink(**args)
    assert err.value.field == field


def test_nothing_connects_before_the_first_run(tmp_path: Path) -> None:
    sink = DatabaseSink(prof(), ["t"], sqlite(str(tmp_path / "x.db")))
    assert not (tmp_path / "x.db").exists()
    sink.close()
    sink.close()  # idempotent


def test_a_retry_timeout_below_the_transaction_bound_is_refused(tmp_path: Path) -> None:
    """A new owner would give up on a frozen member's locks before the server ends them."""
    database = Database(
        lambda: None, "postgresql", transaction_timeout_s=90.0, end_frozen_holders=True
    )
    with pytest.raises(ConfigurationError) as err:
        DatabaseSink(prof(), ["t"], database, retry_timeout_s=60.0)
    assert err.value.field == "retry_timeout_s"
    assert "90" in str(err.value)
    DatabaseSink(prof(), ["t"], database, retry_timeout_s=90.0).close()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"transaction_timeout_s": 0.0}, "transaction_timeout_s"),
        ({"transaction_timeout_s": None, "end_frozen_holders": True}, "end_frozen_holders"),
    ],
)
def test_database_bounds_refused_with_the_field_named(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigurationError) as err:
        Database(lambda: None, "postgresql", **kwargs)
    assert err.value.field == field


def test_application_name_names_group_host_and_pid_in_63_bytes() -> None:
    import os
    import socket

    name = application_name("orders-to-db")
    assert name == f"ksem-sink orders-to-db {socket.gethostname()}:{os.getpid()}"
    long = application_name("g" * 200)
    assert len(long.encode()) <= 63 and long.endswith(f":{os.getpid()}")
