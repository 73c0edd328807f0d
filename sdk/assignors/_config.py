"""Rendering an assignor choice to librdkafka keys, for the classic and the KIP-848 protocol.

Classic protocol (``group.protocol=classic``): the group leader runs the client-side strategy
named by ``partition.assignment.strategy``; only assignors with a ``native_name`` can be named
there. Python-only assignors run through :class:`~sdk.assignors.GroupAssignedConsumer` or
:class:`~sdk.assignors.StaticAssignedConsumer` instead.

KIP-848 (``group.protocol=consumer``): the broker assigns, with the server-side assignor named by
``group.remote.assignor`` (Kafka 4.x ships ``uniform`` and ``range``);
``partition.assignment.strategy`` must not be set, and no client-side (Python) assignor can run.
"""

from __future__ import annotations

from typing import Literal

from sdk.assignors._protocol import Assignor
from sdk.assignors._registry import resolve_assignor
from sdk.errors import ConfigurationError

__all__ = ["REMOTE_ASSIGNORS", "GroupProtocol", "assignor_config"]

GroupProtocol = Literal["classic", "consumer"]

REMOTE_ASSIGNORS: tuple[str, ...] = ("range", "uniform")
"""Server-side assignors of Apache Kafka 4.x (``group.consumer.assignors``)."""

_REMOTE_FOR: dict[str, str] = {
    "cooperative_sticky": "uniform",
    "range": "range",
    "sticky": "uniform",
}


def assignor_config(
    spec: str | Assignor | None = None,
    group_protocol: GroupProtocol = "classic",
    *,
    remote_assignor: str | None = None,
) -> dict[str, str]:
    """Return the librdkafka consumer keys that select ``spec`` under ``group_protocol``.

    Args:
        spec: An assignor name or instance (see :func:`~sdk.assignors.resolve_assignor`), or
            None for librdkafka's default (classic) or the broker's default (consumer).
        group_protocol: ``"classic"`` (client-side assignment) or ``"consumer"`` (KIP-848,
            server-side assignment).
        remote_assignor: With ``"consumer"``: the server-side assignor, ``"uniform"`` or
            ``"range"``; overrides the one derived from ``spec`` (``range`` → ``range``,
            ``sticky``/``cooperative_sticky`` → ``uniform``, which is sticky and balanced).

    Returns:
        The keys to merge into the consumer config.

    Raises:
        ConfigurationError: Unknown name; a Python-only assignor (no native strategy); an
            assignor with no server-side equivalent under ``"consumer"``; ``remote_assignor``
            with ``"classic"``; an unknown protocol.
    """
    if group_protocol == "classic":
        if remote_assignor is not None:
            raise ConfigurationError(
                "group.remote.assignor only applies to group_protocol='consumer' (KIP-848)",
                field="group.remote.assignor",
            )
        if spec is None:
            return {}
        assignor = resolve_assignor(spec)
        if assignor.native_name is None:
            raise ConfigurationError(
                f"assignor {assignor.name!r} is Python-only and librdkafka cannot run it in the "
                "group protocol; use sdk.assignors.GroupAssignedConsumer (dynamic group) or "
                "StaticAssignedConsumer (declared members)",
                field="assignor",
            )
        return {"partition.assignment.strategy": assignor.native_name}
    if group_protocol == "consumer":
        config = {"group.protocol": "consumer"}
        remote = remote_assignor
        if remote is None and spec is not None:
            assignor = resolve_assignor(spec)
            remote = _REMOTE_FOR.get(assignor.name)
            if remote is None:
                raise ConfigurationError(
                    f"assignor {assignor.name!r} has no server-side equivalent under KIP-848 "
                    f"(group_protocol='consumer'); use one of {', '.join(sorted(_REMOTE_FOR))} "
                    f"or remote_assignor= one of {', '.join(REMOTE_ASSIGNORS)}",
                    field="assignor",
                )
        if remote is not None:
            if remote not in REMOTE_ASSIGNORS:
                raise ConfigurationError(
                    f"unknown server-side assignor {remote!r}; valid names: "
                    f"{', '.join(REMOTE_ASSIGNORS)}",
                    field="group.remote.assignor",
                )
            config["group.remote.assignor"] = remote
        return config
    raise ConfigurationError(
        f"unknown group protocol {group_protocol!r}; valid: classic, consumer",
        field="group_protocol",
    )
