from __future__ import annotations

import pytest

from sdk.assignors import assignor_config
from sdk.assignors._group import check_group_config
from sdk.errors import ConfigurationError


def test_classic_renders_librdkafka_strategy_names() -> None:
    assert assignor_config("range") == {"partition.assignment.strategy": "range"}
    assert assignor_config("round_robin") == {"partition.assignment.strategy": "roundrobin"}
    assert assignor_config("cooperative_sticky") == {
        "partition.assignment.strategy": "cooperative-sticky"
    }
    assert assignor_config(None) == {}


def test_classic_rejects_python_only_assignors() -> None:
    with pytest.raises(ConfigurationError, match="GroupAssignedConsumer") as info:
        assignor_config("lag_aware")
    assert info.value.field == "assignor"


def test_kip848_renders_server_side_assignor_and_no_strategy() -> None:
    assert assignor_config(None, "consumer") == {"group.protocol": "consumer"}
    assert assignor_config("range", "consumer") == {
        "group.protocol": "consumer",
        "group.remote.assignor": "range",
    }
    assert assignor_config("cooperative_sticky", "consumer") == {
        "group.protocol": "consumer",
        "group.remote.assignor": "uniform",
    }
    assert (
        assignor_config(None, "consumer", remote_assignor="uniform")["group.remote.assignor"]
        == "uniform"
    )
    for cfg in (assignor_config("range", "consumer"), assignor_config(None, "consumer")):
        assert "partition.assignment.strategy" not in cfg


def test_kip848_errors_name_the_field() -> None:
    with pytest.raises(ConfigurationError, match="no server-side equivalent") as a:
        assignor_config("round_robin", "consumer")
    assert a.value.field == "assignor"
    with pytest.raises(ConfigurationError, match="uniform") as b:
        assignor_config(None, "consumer", remote_assignor="sticky")
    assert b.value.field == "group.remote.assignor"
    with pytest.raises(ConfigurationError) as c:
        assignor_config("range", "classic", remote_assignor="range")
    assert c.value.field == "group.remote.assignor"
    with pytest.raises(ConfigurationError) as d:
        assignor_config("range", "kip848")  # type: ignore[arg-type]
    assert d.value.field == "group_protocol"


@pytest.mark.parametrize(
    ("config", "topics", "guarantee", "field"),
    [
        ({}, ["t"], "at_least_once", "group.id"),
        ({"group.id": "g", "group.protocol": "consumer"}, ["t"], "at_least_once", "group.protocol"),
        (
            {"group.id": "g", "partition.assignment.strategy": "cooperative-sticky"},
            ["t"],
            "at_least_once",
            "partition.assignment.strategy",
        ),
        ({"group.id": "g", "group.instance.id": "i1"}, ["t"], "at_least_once", "group.instance.id"),
        ({"group.id": "g"}, ["t"], "exactly_once", "assignor"),
        ({"group.id": "g"}, ["^t.*"], "at_least_once", "topics"),
    ],
)
def test_group_overlay_rejects_unsafe_combinations(
    config: dict[str, str], topics: list[str], guarantee: str, field: str
) -> None:
    with pytest.raises(ConfigurationError) as info:
        check_group_config(config, topics, guarantee)
    assert info.value.field == field


def test_group_overlay_accepts_eager_classic() -> None:
    check_group_config(
        {"group.id": "g", "partition.assignment.strategy": "roundrobin"}, ["t"], "at_least_once"
    )
