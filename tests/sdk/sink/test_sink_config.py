"""DatabaseSink refuses what cannot keep its guarantee, naming the field (no broker)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sdk.errors import ConfigurationError
from sdk.profiles import ConsumerProfile
from sdk.sink import DatabaseSink, sqlite


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
