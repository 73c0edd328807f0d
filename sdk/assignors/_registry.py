"""Name registry, entry-point discovery and the ``str | instance`` resolver for assignors.

Lookup order for a name: the built-ins and :func:`register_assignor` registrations, then the
``kafka_semantics.assignors`` entry-point group. An entry point may name an
:class:`~sdk.assignors.Assignor` instance, a class, or any zero-argument factory::

    # third party's pyproject.toml
    [project.entry-points."kafka_semantics.assignors"]
    by_weight = "acme_kafka.assigning:WeightedAssignor"
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sdk._registry import Registry
from sdk.assignors._builtin import (
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
)
from sdk.assignors._examples import LagAwareAssignor, RackAwareAssignor
from sdk.assignors._protocol import Assignor
from sdk.errors import ConfigurationError

__all__ = [
    "DEFAULT_ASSIGNOR",
    "ENTRY_POINT_GROUP",
    "AssignorFactory",
    "available_assignors",
    "register_assignor",
    "resolve_assignor",
    "unregister_assignor",
]

ENTRY_POINT_GROUP = "kafka_semantics.assignors"
DEFAULT_ASSIGNOR = "range"

AssignorFactory = Callable[[], Assignor]
"""Zero-argument callable returning an :class:`~sdk.assignors.Assignor`."""

_BUILTINS: dict[str, AssignorFactory] = {
    "cooperative_sticky": CooperativeStickyAssignor,
    "lag_aware": LagAwareAssignor,
    "rack_aware": RackAwareAssignor,
    "range": RangeAssignor,
    "round_robin": RoundRobinAssignor,
    "sticky": StickyAssignor,
}


def _named(candidate: Any, origin: str) -> None:
    if not isinstance(candidate.name, str) or not candidate.name:
        raise ConfigurationError(f"{origin}: name must be a non-empty str", field="assignor")


_REGISTRY: Registry[Assignor] = Registry(
    kind="assignor",
    type_name="an Assignor",
    group=ENTRY_POINT_GROUP,
    builtins=_BUILTINS,
    default=DEFAULT_ASSIGNOR,
    method="assign",
    check=_named,
)

# the public functions are the registry's own methods (their docstrings say what each does)
register_assignor = _REGISTRY.register
unregister_assignor = _REGISTRY.unregister
available_assignors = _REGISTRY.available
resolve_assignor = _REGISTRY.resolve
