"""Pluggable assignors: a Protocol, built-ins, a name registry, and Python assignors on real groups.

Built-ins (``available_assignors()`` lists these plus registered and entry-point ones):

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

from sdk.assignors._builtin import (
    CooperativeStickyAssignor,
    RangeAssignor,
    RoundRobinAssignor,
    StickyAssignor,
    balanced_sticky,
    librdkafka_order,
)
from sdk.assignors._config import REMOTE_ASSIGNORS, GroupProtocol, assignor_config
from sdk.assignors._examples import LagAwareAssignor, RackAwareAssignor
from sdk.assignors._group import (
    GroupAssignedConsumer,
    check_group_config,
    decode_client_id,
    encode_client_id,
)
from sdk.assignors._protocol import (
    Assignor,
    Member,
    Plan,
    SupportsSticky,
    TopicPartition,
    check_plan,
    sorted_plan,
)
from sdk.assignors._registry import (
    DEFAULT_ASSIGNOR,
    ENTRY_POINT_GROUP,
    AssignorFactory,
    available_assignors,
    register_assignor,
    resolve_assignor,
    unregister_assignor,
)
from sdk.assignors._static import StaticAssignedConsumer, static_plan

__all__ = [
    "DEFAULT_ASSIGNOR",
    "ENTRY_POINT_GROUP",
    "REMOTE_ASSIGNORS",
    "Assignor",
    "AssignorFactory",
    "CooperativeStickyAssignor",
    "GroupAssignedConsumer",
    "GroupProtocol",
    "LagAwareAssignor",
    "Member",
    "Plan",
    "RackAwareAssignor",
    "RangeAssignor",
    "RoundRobinAssignor",
    "StaticAssignedConsumer",
    "StickyAssignor",
    "SupportsSticky",
    "TopicPartition",
    "assignor_config",
    "available_assignors",
    "balanced_sticky",
    "check_group_config",
    "check_plan",
    "decode_client_id",
    "encode_client_id",
    "librdkafka_order",
    "register_assignor",
    "resolve_assignor",
    "sorted_plan",
    "static_plan",
    "unregister_assignor",
]
