"""Pluggable assignors: a Protocol, built-ins, a name registry, and Python assignors on real groups.

Built-ins (``available_assignors()`` lists these plus registered and entry-point ones;
:func:`resolve_assignor` gives one by name):

======================  ===============================  =====================================
name                    librdkafka strategy              plan
======================  ===============================  =====================================
``range`` (default)     ``range``                        per topic, contiguous ranges
``round_robin``         ``roundrobin``                   all partitions dealt cyclically
``cooperative_sticky``  ``cooperative-sticky``           balanced, sticky, incremental
``sticky``              (Python, eager)                  balanced, sticky
``lag_aware``           (Python, example)                balances total lag
``rack_aware``          (Python, example)                prefers replicas in the member's rack
======================  ===============================  =====================================

Native assignors run inside librdkafka (:func:`assignor_config` renders the keys, for the
classic protocol or KIP-848's ``group.protocol=consumer``). Python-only ones run on a dynamic
group through :class:`GroupAssignedConsumer`, or on a declared member list through
:class:`StaticAssignedConsumer`. Third parties plug in with the ``kafka_semantics.assignors``
entry-point group or :func:`register_assignor`.
"""

from typing import Any

from sdk._deprecation import deprecated_name
from sdk.assignors import _builtin, _config, _group, _registry
from sdk.assignors._config import REMOTE_ASSIGNORS, assignor_config
from sdk.assignors._examples import LagAwareAssignor, RackAwareAssignor
from sdk.assignors._group import GroupAssignedConsumer
from sdk.assignors._protocol import (
    Assignor,
    Member,
    Plan,
    SupportsSticky,
    TopicPartition,
    check_plan,
    sorted_plan,
)
from sdk.assignors._registry import available_assignors, register_assignor, resolve_assignor
from sdk.assignors._static import StaticAssignedConsumer, static_plan

__all__ = [
    "REMOTE_ASSIGNORS",
    "Assignor",
    "GroupAssignedConsumer",
    "LagAwareAssignor",
    "Member",
    "Plan",
    "RackAwareAssignor",
    "StaticAssignedConsumer",
    "SupportsSticky",
    "TopicPartition",
    "assignor_config",
    "available_assignors",
    "check_plan",
    "register_assignor",
    "resolve_assignor",
    "sorted_plan",
    "static_plan",
]

_BY_NAME = "it is no longer exported, use resolve_assignor({!r})"
_INTERNAL = "it is internal to sdk.assignors and no longer exported"
_DEPRECATED: dict[str, tuple[str, object]] = {
    "DEFAULT_ASSIGNOR": (
        "it is no longer exported (the default is 'range')",
        _registry.DEFAULT_ASSIGNOR,
    ),
    "ENTRY_POINT_GROUP": (
        "it is no longer exported (the entry-point group is 'kafka_semantics.assignors')",
        _registry.ENTRY_POINT_GROUP,
    ),
    "AssignorFactory": (_INTERNAL, _registry.AssignorFactory),
    "GroupProtocol": (_INTERNAL, _config.GroupProtocol),
    "CooperativeStickyAssignor": (
        _BY_NAME.format("cooperative_sticky"),
        _builtin.CooperativeStickyAssignor,
    ),
    "RangeAssignor": (_BY_NAME.format("range"), _builtin.RangeAssignor),
    "RoundRobinAssignor": (_BY_NAME.format("round_robin"), _builtin.RoundRobinAssignor),
    "StickyAssignor": (_BY_NAME.format("sticky"), _builtin.StickyAssignor),
    "balanced_sticky": (_BY_NAME.format("sticky"), _builtin.balanced_sticky),
    "librdkafka_order": (_INTERNAL, _builtin.librdkafka_order),
    "check_group_config": (_INTERNAL, _group.check_group_config),
    "decode_client_id": (_INTERNAL, _group.decode_client_id),
    "encode_client_id": (_INTERNAL, _group.encode_client_id),
    "unregister_assignor": (_INTERNAL, _registry.unregister_assignor),
}


def __getattr__(name: str) -> Any:
    """Names exported in 0.1 and no longer: deprecated, removed in 0.3."""
    return deprecated_name(__name__, name, _DEPRECATED)
