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

from sdk._registry import Registry
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


_REGISTRY: Registry[Partitioner] = Registry(
    kind="partitioner",
    type_name="a Partitioner",
    group=ENTRY_POINT_GROUP,
    builtins=_BUILTINS,
    default=DEFAULT_PARTITIONER,
    method="for_topic",
    attributes=("requires_consistency",),
    instances_only=True,
)

# the public functions are the registry's own methods (their docstrings say what each does)
register_partitioner = _REGISTRY.register
unregister_partitioner = _REGISTRY.unregister
available_partitioners = _REGISTRY.available
resolve_partitioner = _REGISTRY.resolve
