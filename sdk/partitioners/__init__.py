"""Pluggable partitioners: a per-topic Protocol, built-ins, a name registry and a router.

Built-ins (``available_partitioners()`` lists these plus registered and entry-point ones):

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

from sdk.partitioners._native import (
    CONSISTENT,
    CONSISTENT_RANDOM,
    FNV1A,
    MURMUR2,
    RANDOM,
    HashPartitioner,
    NullKeyRule,
)
from sdk.partitioners._protocol import BatchAware, Partitioner, TopicPartitioner
from sdk.partitioners._python import (
    ExplicitPartitioner,
    FunctionPartitioner,
    KeyModPartitioner,
    RoundRobinPartitioner,
    StickyPartitioner,
    StickyTopicPartitioner,
)
from sdk.partitioners._registry import (
    DEFAULT_PARTITIONER,
    ENTRY_POINT_GROUP,
    PartitionerFactory,
    available_partitioners,
    register_partitioner,
    resolve_partitioner,
    unregister_partitioner,
)
from sdk.partitioners._router import PartitionRouter

__all__ = [
    "CONSISTENT",
    "CONSISTENT_RANDOM",
    "DEFAULT_PARTITIONER",
    "ENTRY_POINT_GROUP",
    "FNV1A",
    "MURMUR2",
    "RANDOM",
    "BatchAware",
    "ExplicitPartitioner",
    "FunctionPartitioner",
    "HashPartitioner",
    "KeyModPartitioner",
    "NullKeyRule",
    "PartitionRouter",
    "Partitioner",
    "PartitionerFactory",
    "RoundRobinPartitioner",
    "StickyPartitioner",
    "StickyTopicPartitioner",
    "TopicPartitioner",
    "available_partitioners",
    "register_partitioner",
    "resolve_partitioner",
    "unregister_partitioner",
]
