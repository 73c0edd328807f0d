"""Name registry, entry-point discovery and the ``str | instance`` resolver for partitioners.

Lookup order for a name: the built-ins and :func:`register_partitioner` registrations, then
the ``kafka_semantics.partitioners`` entry-point group. An entry point may name a
:class:`~sdk.partitioners.Partitioner` instance, a class, or any zero-argument factory::

    # third party's pyproject.toml
    [project.entry-points."kafka_semantics.partitioners"]
    by_region = "acme_kafka.partitioning:RegionPartitioner"
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sdk._registry import Registry
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


_REGISTRY: Registry[Partitioner] = Registry(
    kind="partitioner",
    type_name="a Partitioner",
    group=ENTRY_POINT_GROUP,
    builtins=_BUILTINS,
    default=DEFAULT_PARTITIONER,
    method="for_topic",
    check=_check,
)


def register_partitioner(name: str, factory: PartitionerFactory, *, replace: bool = False) -> None:
    """Register a partitioner factory under ``name``.

    Args:
        name: The name profiles use.
        factory: Zero-argument callable (a class, or ``lambda: instance``).
        replace: Allow replacing an existing registration (never a built-in).

    Raises:
        ConfigurationError: The name is empty, a built-in, or taken and ``replace`` is False.
    """
    _REGISTRY.register(name, factory, replace=replace)


def unregister_partitioner(name: str) -> None:
    """Remove a registration made with :func:`register_partitioner` (missing names are ignored).

    Args:
        name: The registered name.

    Raises:
        ConfigurationError: ``name`` is a built-in.
    """
    _REGISTRY.unregister(name)


def available_partitioners() -> list[str]:
    """Return every resolvable name, sorted: built-ins, registrations and entry points.

    Returns:
        The sorted names.
    """
    return _REGISTRY.available()


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
    return _REGISTRY.resolve(spec)
