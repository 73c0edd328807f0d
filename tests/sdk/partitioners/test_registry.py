"""Registry, resolver and real entry-point discovery (a dist-info written onto sys.path)."""

from __future__ import annotations

import uuid

import pytest

from sdk.errors import ConfigurationError
from sdk.partitioners import (
    FunctionPartitioner,
    KeyModPartitioner,
    Partitioner,
    available_partitioners,
    register_partitioner,
    resolve_partitioner,
)
from sdk.partitioners._native import MURMUR2
from sdk.partitioners._registry import unregister_partitioner

BUILTINS = [
    "consistent",
    "consistent_random",
    "explicit",
    "fnv1a",
    "key_mod",
    "murmur2",
    "random",
    "round_robin",
    "sticky",
]


def test_builtins_are_listed_sorted() -> None:
    names = available_partitioners()
    assert names == sorted(names)
    assert set(BUILTINS) <= set(names)
    for name in BUILTINS:
        assert resolve_partitioner(name).name == name


def test_unknown_name_lists_valid_names() -> None:
    with pytest.raises(ConfigurationError) as err:
        resolve_partitioner("murmur3")
    assert err.value.field == "partitioner"
    for name in BUILTINS:
        assert name in str(err.value)


def test_instance_passes_through_and_non_partitioner_is_refused() -> None:
    km = KeyModPartitioner(encoding="big_endian")
    assert resolve_partitioner(km) is km
    with pytest.raises(ConfigurationError, match="not a Partitioner"):
        resolve_partitioner(object())  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"pass KeyModPartitioner\(\)"):
        resolve_partitioner(KeyModPartitioner)  # type: ignore[arg-type]


def test_register_and_unregister() -> None:
    name = f"const-{uuid.uuid4().hex[:6]}"
    register_partitioner(name, lambda: FunctionPartitioner(name, lambda k, v, n: n - 1))
    try:
        assert name in available_partitioners()
        assert resolve_partitioner(name).for_topic("t").partition(None, None, 4) == 3
        with pytest.raises(ConfigurationError, match="already registered"):
            register_partitioner(name, lambda: MURMUR2)
        register_partitioner(name, lambda: MURMUR2, replace=True)
        assert resolve_partitioner(name) is MURMUR2
    finally:
        unregister_partitioner(name)
    assert name not in available_partitioners()
    with pytest.raises(ConfigurationError, match="built-in"):
        register_partitioner("murmur2", lambda: MURMUR2, replace=True)


def test_failing_factory_is_a_configuration_error() -> None:
    name = f"broken-{uuid.uuid4().hex[:6]}"

    def factory() -> Partitioner:
        raise RuntimeError("boom")

    register_partitioner(name, factory)
    try:
        with pytest.raises(ConfigurationError, match="boom"):
            resolve_partitioner(name)
    finally:
        unregister_partitioner(name)


def test_entry_point_partitioner_is_discovered_and_used(plugin_dist: str) -> None:
    names = available_partitioners()
    assert f"last-class-{plugin_dist}" in names
    assert f"last-instance-{plugin_dist}" in names
    for name in (f"last-class-{plugin_dist}", f"last-instance-{plugin_dist}"):
        partitioner = resolve_partitioner(name)
        assert partitioner.name == "last"
        assert partitioner.native_name is None
        assert partitioner.for_topic("t").partition(b"k", None, 5) == 4


def test_broken_entry_points_are_configuration_errors(plugin_dist: str) -> None:
    with pytest.raises(ConfigurationError, match="not a Partitioner"):
        resolve_partitioner(f"bad-{plugin_dist}")
    with pytest.raises(ConfigurationError, match="exploded"):
        resolve_partitioner(f"broken-{plugin_dist}")
    with pytest.raises(ConfigurationError, match="could not load"):
        resolve_partitioner(f"missing-{plugin_dist}")


def test_entry_points_vanish_with_their_distribution() -> None:
    assert not any(name.startswith("last-class-") for name in available_partitioners())
