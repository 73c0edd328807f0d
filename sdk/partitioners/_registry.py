"""Name registry, entry-point discovery and the ``str | instance`` resolver for partitioners.

Lookup order for a name: the built-ins and :func:`register_partitioner` registrations, then
the ``kafka_semantics.partitioners`` entry-point group. An entry point may name a
:class:`~sdk.partitioners.Partitioner` instance, a class, or any zero-argument factory::

    # third party's pyproject.toml
    [project.entry-points."kafka_semantics.partitioners"]
    by_region = "acme_kafka.partitioning:RegionPartitioner"
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from importlib import metadata
from typing import Any

from sdk.errors import ConfigurationError
from sdk.partitioners._native import CONSISTENT, CONSISTENT_RANDOM, FNV1A, MURMUR2, RANDOM
from sdk.partitioners._protocol import Partitioner
from sdk.partitioners._python import (
    ExplicitPartitioner,
    KeyModPartitioner,
    RoundRobinPartitioner,
    StickyPartitioner,
)

__all__ = [
    "DEFAULT_PARTITIONER",
    "ENTRY_POINT_GROUP",
    "PartitionerFactory",
    "available_partitioners",
    "register_partitioner",
    "resolve_partitioner",
    "unregister_partitioner",
]

ENTRY_POINT_GROUP = "kafka_semantics.partitioners"
DEFAULT_PARTITIONER = "murmur2"

PartitionerFactory = Callable[[], Partitioner]
"""Zero-argument callable returning a :class:`~sdk.partitioners.Partitioner`."""

_BUILTINS: dict[str, PartitionerFactory] = {
    "consistent": lambda: CONSISTENT,
    "consistent_random": lambda: CONSISTENT_RANDOM,
    "explicit": ExplicitPartitioner,
    "fnv1a": lambda: FNV1A,
    "key_mod": KeyModPartitioner,
    "murmur2": lambda: MURMUR2,
    "random": lambda: RANDOM,
    "round_robin": RoundRobinPartitioner,
    "sticky": StickyPartitioner,
}

_lock = threading.Lock()
_registered: dict[str, PartitionerFactory] = dict(_BUILTINS)


def register_partitioner(name: str, factory: PartitionerFactory, *, replace: bool = False) -> None:
    """Register a partitioner factory under ``name``.

    Args:
        name: The name profiles use.
        factory: Zero-argument callable (a class, or ``lambda: instance``).
        replace: Allow replacing an existing registration (never a built-in).

    Raises:
        ConfigurationError: The name is empty, a built-in, or taken and ``replace`` is False.
    """
    if not name:
        raise ConfigurationError("a partitioner name must not be empty", field="partitioner")
    with _lock:
        if name in _BUILTINS:
            raise ConfigurationError(
                f"{name!r} is a built-in partitioner and cannot be replaced", field="partitioner"
            )
        if name in _registered and not replace:
            raise ConfigurationError(
                f"partitioner {name!r} is already registered (pass replace=True)",
                field="partitioner",
            )
        _registered[name] = factory


def unregister_partitioner(name: str) -> None:
    """Remove a registration made with :func:`register_partitioner` (missing names are ignored).

    Args:
        name: The registered name.

    Raises:
        ConfigurationError: ``name`` is a built-in.
    """
    if name in _BUILTINS:
        raise ConfigurationError(f"{name!r} is a built-in partitioner", field="partitioner")
    with _lock:
        _registered.pop(name, None)


def _entry_points() -> dict[str, metadata.EntryPoint]:
    return {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def available_partitioners() -> list[str]:
    """Return every resolvable name, sorted: built-ins, registrations and entry points.

    Returns:
        The sorted names.
    """
    with _lock:
        names = set(_registered)
    return sorted(names | set(_entry_points()))


def _check(candidate: Any, origin: str) -> Partitioner:
    if isinstance(candidate, type):
        raise ConfigurationError(
            f"{origin} is a class, not a Partitioner instance: pass {candidate.__name__}()",
            field="partitioner",
        )
    missing = [
        attr
        for attr in ("name", "native_name", "requires_consistency", "for_topic")
        if not hasattr(candidate, attr)
    ]
    if missing or not callable(candidate.for_topic):
        raise ConfigurationError(
            f"{origin} is not a Partitioner (missing {', '.join(missing) or 'for_topic()'}): "
            f"{candidate!r}",
            field="partitioner",
        )
    native = candidate.native_name
    if native is not None and not isinstance(native, str):
        raise ConfigurationError(
            f"{origin}: native_name must be a str or None, got {native!r}", field="partitioner"
        )
    result: Partitioner = candidate
    return result


def _from_entry_point(ep: metadata.EntryPoint) -> Partitioner:
    origin = f"entry point {ep.name!r} ({ep.value}) of group {ENTRY_POINT_GROUP!r}"
    try:
        loaded = ep.load()
    except Exception as exc:
        raise ConfigurationError(f"could not load {origin}: {exc}", field="partitioner") from exc
    if isinstance(loaded, type) or not hasattr(loaded, "for_topic"):
        if not callable(loaded):
            raise ConfigurationError(f"{origin} is not a Partitioner", field="partitioner")
        try:
            loaded = loaded()
        except Exception as exc:
            raise ConfigurationError(f"{origin} failed: {exc}", field="partitioner") from exc
    return _check(loaded, origin)


def resolve_partitioner(spec: str | Partitioner | None = None) -> Partitioner:
    """Turn a profile value into a :class:`~sdk.partitioners.Partitioner`.

    Args:
        spec: A name (built-in, registered, or an entry point of ``kafka_semantics.partitioners``),
            a Partitioner instance (returned as is after a shape check), or None for the default
            (``"murmur2"``).

    Returns:
        The partitioner.

    Raises:
        ConfigurationError: Unknown name (the message lists the valid ones), a broken entry
            point, or an object that is not a Partitioner.
    """
    if spec is None:
        spec = DEFAULT_PARTITIONER
    if not isinstance(spec, str):
        return _check(spec, "the partitioner")
    with _lock:
        factory = _registered.get(spec)
    if factory is not None:
        try:
            made = factory()
        except ConfigurationError:
            raise
        except Exception as exc:
            raise ConfigurationError(
                f"partitioner factory {spec!r} failed: {exc}", field="partitioner"
            ) from exc
        return _check(made, f"partitioner {spec!r}")
    entry_points = _entry_points()
    if spec in entry_points:
        return _from_entry_point(entry_points[spec])
    raise ConfigurationError(
        f"unknown partitioner {spec!r}; valid names: {', '.join(available_partitioners())}",
        field="partitioner",
    )
