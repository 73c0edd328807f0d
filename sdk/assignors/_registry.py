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


def _check(candidate: Any, origin: str) -> Assignor:
    missing = [attr for attr in ("name", "native_name", "assign") if not hasattr(candidate, attr)]
    if missing or not callable(candidate.assign):
        raise ConfigurationError(
            f"{origin} is not an Assignor (missing {', '.join(missing) or 'assign()'}): "
            f"{candidate!r}",
            field="assignor",
        )
    if not isinstance(candidate.name, str) or not candidate.name:
        raise ConfigurationError(f"{origin}: name must be a non-empty str", field="assignor")
    native = candidate.native_name
    if native is not None and not isinstance(native, str):
        raise ConfigurationError(
            f"{origin}: native_name must be a str or None, got {native!r}", field="assignor"
        )
    result: Assignor = candidate
    return result


_REGISTRY: Registry[Assignor] = Registry(
    kind="assignor",
    type_name="an Assignor",
    group=ENTRY_POINT_GROUP,
    builtins=_BUILTINS,
    default=DEFAULT_ASSIGNOR,
    method="assign",
    check=_check,
)


def register_assignor(name: str, factory: AssignorFactory, *, replace: bool = False) -> None:
    """Register an assignor factory under ``name``.

    Args:
        name: The name profiles use.
        factory: Zero-argument callable (a class, or ``lambda: instance``).
        replace: Allow replacing an existing registration (never a built-in).

    Raises:
        ConfigurationError: The name is empty, a built-in, or taken and ``replace`` is False.
    """
    _REGISTRY.register(name, factory, replace=replace)


def unregister_assignor(name: str) -> None:
    """Remove a registration made with :func:`register_assignor` (missing names are ignored).

    Args:
        name: The registered name.

    Raises:
        ConfigurationError: ``name`` is a built-in.
    """
    _REGISTRY.unregister(name)


def available_assignors() -> list[str]:
    """Return every resolvable name, sorted: built-ins, registrations and entry points.

    Returns:
        The sorted names.
    """
    return _REGISTRY.available()


def resolve_assignor(spec: str | Assignor | None = None) -> Assignor:
    """Turn a profile value into an :class:`~sdk.assignors.Assignor`.

    Args:
        spec: A name (built-in, registered, or an entry point of ``kafka_semantics.assignors``),
            an Assignor instance (returned as is after a shape check), or None for the default
            (``"range"``, librdkafka's default too).

    Returns:
        The assignor.

    Raises:
        ConfigurationError: Unknown name (the message lists the valid ones), a broken entry
            point, or an object that is not an Assignor.
    """
    return _REGISTRY.resolve(spec)
