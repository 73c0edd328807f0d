"""Built-ins librdkafka does not have; they run in Python per record.

``round_robin`` (a cyclic counter per topic), ``sticky`` (KIP-480/KIP-794 style for null keys),
``key_mod`` (integer key modulo the partition count), ``explicit`` (the caller passes the
partition) and :class:`FunctionPartitioner` (wrap any ``fn(key, value, n) -> int``).
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import confluent_kafka

from sdk.errors import ConfigurationError, SerializationError

__all__ = [
    "ExplicitPartitioner",
    "FunctionPartitioner",
    "KeyModPartitioner",
    "RoundRobinPartitioner",
    "StickyPartitioner",
    "StickyTopicPartitioner",
]


class _RoundRobinTopic:
    __slots__ = ("_counter",)

    def __init__(self) -> None:
        self._counter = itertools.count()  # next() is atomic under the GIL

    def partition(self, key: bytes | None, value: bytes | None, partition_count: int) -> int:
        return next(self._counter) % partition_count


@dataclass(frozen=True)
class RoundRobinPartitioner:
    """Cycle through the partitions, one record each, ignoring keys (one counter per topic).

    N records over n partitions (n unchanged meanwhile) put ``N // n`` or ``N // n + 1`` on
    each partition.
    """

    name: str = "round_robin"
    native_name: None = None
    requires_consistency: bool = False

    def for_topic(self, topic: str) -> _RoundRobinTopic:
        """Return a new per-topic counter.

        Args:
            topic: Topic name.

        Returns:
            The topic's round-robin partitioner.
        """
        return _RoundRobinTopic()


class StickyTopicPartitioner:
    """Per-topic sticky state: the current partition and the bytes put on it so far.

    Keyed records are placed with Java-compatible murmur2 and do not affect the sticky state.
    A null-key record goes to the current sticky partition; the partition changes (to a random
    *different* one when there are several) once ``batch_bytes`` of null-key value bytes went
    to it (KIP-794's "switch after batch.size bytes") or after :meth:`on_batch_sent`
    (KIP-480's "switch when the batch is sent").
    """

    __slots__ = ("_batch_bytes", "_current", "_filled", "switches")

    def __init__(self, batch_bytes: int) -> None:
        self._batch_bytes = batch_bytes
        self._current = -1
        self._filled = 0
        self.switches = 0
        """How many times the sticky partition changed (for metrics and tests)."""

    def partition(self, key: bytes | None, value: bytes | None, partition_count: int) -> int:
        """Return murmur2 placement for keyed records, the sticky partition for null keys.

        Args:
            key: Serialized key or None.
            value: Serialized value or None.
            partition_count: Partitions of the topic.

        Returns:
            The partition.
        """
        if key is not None:
            return confluent_kafka.murmur2(key, partition_count)
        current = self._current
        if current < 0 or current >= partition_count or self._filled >= self._batch_bytes:
            current = self._next(current, partition_count)
        self._filled += len(value) if value else 0
        return current

    def on_batch_sent(self) -> None:
        """Make the next null-key record start a new batch on another partition."""
        self._filled = self._batch_bytes

    def _next(self, previous: int, partition_count: int) -> int:
        if partition_count == 1:
            chosen = 0
        elif 0 <= previous < partition_count:
            chosen = random.randrange(partition_count - 1)
            if chosen >= previous:
                chosen += 1
        else:
            chosen = random.randrange(partition_count)
        if previous >= 0:
            self.switches += 1
        self._current = chosen
        self._filled = 0
        return chosen


@dataclass(frozen=True)
class StickyPartitioner:
    """Java-producer-like: murmur2 for keys, sticky batches for null keys (KIP-480/KIP-794).

    Attributes:
        batch_bytes: Null-key value bytes per partition before switching; Java's ``batch.size``
            default is 16384. Set it to the producer's ``batch.size`` to switch once per batch.
    """

    batch_bytes: int = 16384
    name: str = "sticky"
    native_name: None = None
    requires_consistency: bool = True

    def __post_init__(self) -> None:
        if self.batch_bytes < 1:
            raise ConfigurationError(
                f"batch_bytes must be >= 1, got {self.batch_bytes}", field="batch_bytes"
            )

    def for_topic(self, topic: str) -> StickyTopicPartitioner:
        """Return new sticky state for ``topic``.

        Args:
            topic: Topic name.

        Returns:
            A :class:`StickyTopicPartitioner`.
        """
        return StickyTopicPartitioner(self.batch_bytes)


KeyEncoding = Literal["decimal", "big_endian"]


class _KeyModTopic:
    __slots__ = ("_decimal",)

    def __init__(self, encoding: KeyEncoding) -> None:
        self._decimal = encoding == "decimal"

    def partition(self, key: bytes | None, value: bytes | None, partition_count: int) -> int:
        if key is None:
            raise SerializationError("key_mod partitioner needs a key, got None", record=value)
        try:
            number = int(key) if self._decimal else int.from_bytes(key, "big", signed=True)
        except ValueError as exc:
            raise SerializationError(
                f"key_mod partitioner needs an ASCII decimal integer key, got {key!r}",
                record=key,
            ) from exc
        return number % partition_count


@dataclass(frozen=True)
class KeyModPartitioner:
    """Integer key modulo the partition count (non-negative for negative keys too).

    Attributes:
        encoding: How the key bytes encode the integer: ``"decimal"`` (ASCII text such as
            ``b"42"``) or ``"big_endian"`` (two's complement, as Kafka's Integer/LongSerializer
            and confluent-kafka's ``IntegerSerializer`` write it).
    """

    encoding: KeyEncoding = "decimal"
    name: str = "key_mod"
    native_name: None = None
    requires_consistency: bool = True

    def __post_init__(self) -> None:
        if self.encoding not in ("decimal", "big_endian"):
            raise ConfigurationError(
                f"encoding must be 'decimal' or 'big_endian', got {self.encoding!r}",
                field="encoding",
            )

    def for_topic(self, topic: str) -> _KeyModTopic:
        """Return the (stateless) per-topic partitioner.

        Args:
            topic: Topic name.

        Returns:
            The key-modulo partitioner.
        """
        return _KeyModTopic(self.encoding)


class _ExplicitTopic:
    __slots__ = ("_topic",)

    def __init__(self, topic: str) -> None:
        self._topic = topic

    def partition(self, key: bytes | None, value: bytes | None, partition_count: int) -> int:
        raise ConfigurationError(
            f"the 'explicit' partitioner needs partition=... on every record (topic "
            f"{self._topic!r})",
            field="partition",
        )


@dataclass(frozen=True)
class ExplicitPartitioner:
    """The caller chooses: every produce call must pass ``partition=``; otherwise it fails."""

    name: str = "explicit"
    native_name: None = None
    requires_consistency: bool = True

    def for_topic(self, topic: str) -> _ExplicitTopic:
        """Return a partitioner that refuses records without an explicit partition.

        Args:
            topic: Topic name.

        Returns:
            A partitioner whose ``partition()`` raises ``ConfigurationError``.
        """
        return _ExplicitTopic(topic)


PartitionFunction = Callable[[bytes | None, bytes | None, int], int]
"""``(key, value, partition_count) -> partition``."""


class _FunctionTopic:
    __slots__ = ("partition",)

    def __init__(self, function: PartitionFunction) -> None:
        self.partition = function  # the bound call is the function itself: no extra frame


@dataclass(frozen=True)
class FunctionPartitioner:
    """Wrap a plain function as a stateless custom partitioner.

    Attributes:
        name: The name it is registered under.
        function: ``(key, value, partition_count) -> partition``.
        requires_consistency: Whether same-key records must stay on one partition.
    """

    name: str
    function: PartitionFunction = field(repr=False)
    requires_consistency: bool = True
    native_name: None = None

    def for_topic(self, topic: str) -> _FunctionTopic:
        """Return the function as a per-topic partitioner.

        Args:
            topic: Topic name.

        Returns:
            A partitioner calling :attr:`function`.
        """
        return _FunctionTopic(self.function)
