from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from sdk.assignors import Assignor, available_assignors, register_assignor, resolve_assignor
from sdk.assignors._builtin import RangeAssignor
from sdk.assignors._registry import ENTRY_POINT_GROUP, unregister_assignor
from sdk.errors import ConfigurationError


def test_builtins_resolve_with_native_names() -> None:
    natives = {
        n: resolve_assignor(n).native_name
        for n in ("range", "round_robin", "cooperative_sticky", "sticky", "lag_aware", "rack_aware")
    }
    assert natives == {
        "range": "range",
        "round_robin": "roundrobin",
        "cooperative_sticky": "cooperative-sticky",
        "sticky": None,
        "lag_aware": None,
        "rack_aware": None,
    }
    assert resolve_assignor(None).name == "range"
    assert all(isinstance(resolve_assignor(n), Assignor) for n in available_assignors())


def test_unknown_name_lists_valid_names_and_field() -> None:
    with pytest.raises(ConfigurationError) as info:
        resolve_assignor("roundrobbin")
    assert info.value.field == "assignor"
    for name in ("range", "round_robin", "sticky", "cooperative_sticky"):
        assert name in str(info.value)


def test_instance_passes_through_and_non_assignor_is_rejected() -> None:
    ra = RangeAssignor()
    assert resolve_assignor(ra) is ra
    with pytest.raises(ConfigurationError, match="not an Assignor"):
        resolve_assignor(object())  # type: ignore[arg-type]


def test_register_and_unregister() -> None:
    class Mine(RangeAssignor):
        name = "mine_reg"

    register_assignor("mine_reg", Mine)
    try:
        assert "mine_reg" in available_assignors()
        assert resolve_assignor("mine_reg").name == "mine_reg"
        with pytest.raises(ConfigurationError, match="already registered"):
            register_assignor("mine_reg", Mine)
        with pytest.raises(ConfigurationError, match="built-in"):
            register_assignor("range", Mine)
    finally:
        unregister_assignor("mine_reg")
    assert "mine_reg" not in available_assignors()


@pytest.fixture
def plugin_dist(tmp_path: Path) -> Iterator[str]:
    """A real installed-looking distribution on sys.path declaring two entry points."""
    mod = f"ks_plugin_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{mod}.py").write_text(
        textwrap.dedent("""
        class Reverse:
            name = "reverse_rr"
            native_name = None
            def assign(self, members, partitions):
                ids = sorted((m.member_id for m in members), reverse=True)
                plan = {i: [] for i in ids}
                for n, tp in enumerate(sorted(partitions)):
                    plan[ids[n % len(ids)]].append(tp)
                return {k: sorted(plan[k]) for k in sorted(plan)}
        def broken():
            raise RuntimeError("boom")
    """)
    )
    dist = tmp_path / f"{mod}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {mod}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[{ENTRY_POINT_GROUP}]\nreverse_rr = {mod}:Reverse\nbroken_ep = {mod}:broken\n"
    )
    sys.path.insert(0, str(tmp_path))
    yield mod
    sys.path.remove(str(tmp_path))
    sys.modules.pop(mod, None)


def test_entry_points_are_discovered_for_real(plugin_dist: str) -> None:
    from sdk.assignors import Member, TopicPartition

    assert {"reverse_rr", "broken_ep"} <= set(available_assignors())
    assignor = resolve_assignor("reverse_rr")
    assert type(assignor).__module__ == plugin_dist
    plan = assignor.assign(
        [Member.of("a", ["t"]), Member.of("b", ["t"])],
        [TopicPartition("t", 0), TopicPartition("t", 1)],
    )
    assert plan == {"a": [TopicPartition("t", 1)], "b": [TopicPartition("t", 0)]}
    with pytest.raises(ConfigurationError, match="boom"):
        resolve_assignor("broken_ep")
