"""Built-ins that librdkafka implements natively: ``murmur2``, ``consistent``, ``fnv1a``, ...

The producer configures librdkafka's ``partitioner`` setting for these, so no Python runs per
record. The Python :meth:`~HashTopicPartitioner.partition` computes the same placement with
confluent-kafka's own hash helpers (``confluent_kafka.murmur2/consistent/fnv1a``, which call
librdkafka's C functions) - useful to predict where a key goes (e.g. from Spark) and to verify.

Null keys follow librdkafka's rule for each setting:

=====================  ===================  ============================================
name                   librdkafka value     null key (``None``)
=====================  ===================  ============================================
``murmur2``            ``murmur2_random``   random (librdkafka: sticky, see docs)
``fnv1a``              ``fnv1a_random``     random (librdkafka: sticky)
``consistent``         ``consistent``       hashed as empty: one fixed partition
``consistent_random``  ``consistent_random``  random; empty keys (``b""``) too
``random``             ``random``           random (keys are ignored)
=====================  ===================  ============================================
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

import confluent_kafka

__all__ = [
    "CONSISTENT",
    "CONSISTENT_RANDOM",
    "FNV1A",
    "MURMUR2",
    "RANDOM",
    "HashPartitioner",
    "HashTopicPartitioner",
    "NullKeyRule",
]

HashFunction = Callable[[bytes, int], int]
"""``(key, partition_count) -> partition``, e.g. ``confluent_kafka.murmur2``."""


class NullKeyRule(Enum):
    """What a hash partitioner does with keys it does not hash."""

    RANDOM_IF_NULL = "random_if_null"
    """``None`` keys go to a random partition; every other key (``b""`` too) is hashed."""
    RANDOM_IF_EMPTY = "random_if_empty"
    """``None`` and ``b""`` keys go to a random partition."""
    HASH_EMPTY = "hash_empty"
    """``None`` keys are hashed as ``b""``: all land on one partition."""
    ALWAYS_RANDOM = "always_random"
    """Keys are ignored."""


class HashTopicPartitioner:
    """Per-topic view of a :class:`HashPartitioner` (stateless)."""

    __slots__ = ("_hash", "_rule")

    def __init__(self, hash_function: HashFunction, rule: NullKeyRule) -> None:
        self._hash = hash_function
        self._rule = rule

    def partition(self, key: bytes | None, value: bytes | None, partition_count: int) -> int:
        """Return the partition librdkafka's matching native partitioner would pick.

        Args:
            key: Serialized key or None.
            value: Ignored.
            partition_count: Partitions of the topic.

        Returns:
            ``hash(key) % partition_count`` style placement; random where librdkafka is random.
        """
        rule = self._rule
        if key is None:
            if rule is NullKeyRule.HASH_EMPTY:
                return self._hash(b"", partition_count)
            return random.randrange(partition_count)
        if rule is NullKeyRule.ALWAYS_RANDOM or (rule is NullKeyRule.RANDOM_IF_EMPTY and not key):
            return random.randrange(partition_count)
        return self._hash(key, partition_count)


@dataclass(frozen=True)
class HashPartitioner:
    """A built-in with a librdkafka-native twin.

    Attributes:
        name: Registry name.
        native_name: librdkafka ``partitioner`` value.
        hash_function: ``(key, partition_count) -> partition`` from confluent-kafka.
        null_key_rule: Which keys are not hashed (see :class:`NullKeyRule`).
        requires_consistency: True for hashing strategies, False for ``random``.
    """

    name: str
    native_name: str
    hash_function: HashFunction
    null_key_rule: NullKeyRule
    requires_consistency: bool = True

    def for_topic(self, topic: str) -> HashTopicPartitioner:
        """Return the (stateless) per-topic partitioner.

        Args:
            topic: Topic name (unused: hashing does not depend on it).

        Returns:
            A :class:`HashTopicPartitioner`.
        """
        return HashTopicPartitioner(self.hash_function, self.null_key_rule)


MURMUR2 = HashPartitioner(
    "murmur2", "murmur2_random", confluent_kafka.murmur2, NullKeyRule.RANDOM_IF_NULL
)
"""Java-client compatible: ``toPositive(murmur2(key)) % n``; the default for keyed records."""

FNV1A = HashPartitioner("fnv1a", "fnv1a_random", confluent_kafka.fnv1a, NullKeyRule.RANDOM_IF_NULL)
"""FNV-1a hash (what Sarama-based Go clients use)."""

CONSISTENT = HashPartitioner(
    "consistent", "consistent", confluent_kafka.consistent, NullKeyRule.HASH_EMPTY
)
"""CRC32 of the key; null and empty keys all go to one partition."""

CONSISTENT_RANDOM = HashPartitioner(
    "consistent_random",
    "consistent_random",
    confluent_kafka.consistent,
    NullKeyRule.RANDOM_IF_EMPTY,
)
"""librdkafka's own default: CRC32 of the key, null/empty keys random. Not Java-compatible."""

RANDOM = HashPartitioner(
    "random",
    "random",
    confluent_kafka.murmur2,
    NullKeyRule.ALWAYS_RANDOM,
    requires_consistency=False,
)
"""Every record to a random partition (librdkafka applies stickiness to it)."""
