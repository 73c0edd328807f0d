"""Pluggable partitioners: a per-topic Protocol, built-ins, a name registry and a router.

Built-ins (``available_partitioners()`` lists these plus registered and entry-point ones;
:func:`resolve_partitioner` gives one by name):

=====================  ==========================  =========================================
name                   librdkafka ``partitioner``  placement
=====================  ==========================  =========================================
``murmur2`` (default)  ``murmur2_random``          Java-compatible murmur2; null keys random
``fnv1a``              ``fnv1a_random``            FNV-1a; null keys random
``consistent``         ``consistent``              CRC32; null/empty keys one partition
``consistent_random``  ``consistent_random``       CRC32; null/empty keys random
``random``             ``random``                  random
``round_robin``        (Python)                    cyclic counter per topic
``sticky``             (Python)                    murmur2 for keys; null keys stick per batch
``key_mod``            (Python)                    integer key % partition count
``explicit``           (Python)                    the caller passes ``partition=``
=====================  ==========================  =========================================

Third parties plug in with the ``kafka_semantics.partitioners`` entry-point group or
:func:`register_partitioner`; :class:`PartitionRouter` is what the producer calls.
"""

from typing import Any

from sdk._deprecation import deprecated_name
from sdk.partitioners import _native, _python, _registry
from sdk.partitioners._protocol import BatchAware, Partitioner, TopicPartitioner
from sdk.partitioners._python import FunctionPartitioner, KeyModPartitioner, StickyPartitioner
from sdk.partitioners._registry import (
    available_partitioners,
    register_partitioner,
    resolve_partitioner,
)
from sdk.partitioners._router import PartitionRouter

__all__ = [
    "BatchAware",
    "FunctionPartitioner",
    "KeyModPartitioner",
    "PartitionRouter",
    "Partitioner",
    "StickyPartitioner",
    "TopicPartitioner",
    "available_partitioners",
    "register_partitioner",
    "resolve_partitioner",
]

_BY_NAME = "it is no longer exported, use resolve_partitioner({!r})"
_INTERNAL = "it is internal to sdk.partitioners and no longer exported"
_DEPRECATED: dict[str, tuple[str, object]] = {
    "CONSISTENT": (_BY_NAME.format("consistent"), _native.CONSISTENT),
    "CONSISTENT_RANDOM": (_BY_NAME.format("consistent_random"), _native.CONSISTENT_RANDOM),
    "FNV1A": (_BY_NAME.format("fnv1a"), _native.FNV1A),
    "MURMUR2": (_BY_NAME.format("murmur2"), _native.MURMUR2),
    "RANDOM": (_BY_NAME.format("random"), _native.RANDOM),
    "HashPartitioner": (_INTERNAL, _native.HashPartitioner),
    "NullKeyRule": (_INTERNAL, _native.NullKeyRule),
    "ExplicitPartitioner": (_BY_NAME.format("explicit"), _python.ExplicitPartitioner),
    "RoundRobinPartitioner": (_BY_NAME.format("round_robin"), _python.RoundRobinPartitioner),
    "StickyTopicPartitioner": (
        "it is no longer exported, StickyPartitioner().for_topic(topic) gives one",
        _python.StickyTopicPartitioner,
    ),
    "DEFAULT_PARTITIONER": (
        "it is no longer exported (the default is 'murmur2')",
        _registry.DEFAULT_PARTITIONER,
    ),
    "ENTRY_POINT_GROUP": (
        "it is no longer exported (the entry-point group is 'kafka_semantics.partitioners')",
        _registry.ENTRY_POINT_GROUP,
    ),
    "PartitionerFactory": (_INTERNAL, _registry.PartitionerFactory),
    "unregister_partitioner": (_INTERNAL, _registry.unregister_partitioner),
}


def __getattr__(name: str) -> Any:
    """Names exported in 0.1 and no longer: deprecated, removed in 0.3."""
    return deprecated_name(__name__, name, _DEPRECATED)
