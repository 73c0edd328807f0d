"""What the SDK reads of a message: the :class:`KafkaMessage` Protocol (part of the seam).

The clients' Protocols (:mod:`sdk._client`) return and take messages of this type, so that
every module that reads a record (its topic, partition, offset, key, value, headers) is checked
by mypy against one definition.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeAlias, cast

from confluent_kafka import KafkaError, Message

__all__ = ["DeliveryCallback", "KafkaMessage", "MessageHeaders", "polled"]

MessageHeaders: TypeAlias = "list[tuple[str, str | bytes | None]] | dict[str, str | bytes | None]"
"""A message's headers as confluent-kafka gives and takes them (a consumed one: the list)."""


class KafkaMessage(Protocol):
    """What the SDK reads of a ``confluent_kafka.Message`` a client handed it.

    librdkafka sets the partition and offset of every message a client returns, and the topic
    of every record, delivery report and partition event (EOF); only an error event of the
    client as a whole has no topic, which the error paths read with a fallback.
    confluent-kafka's stubs say ``Optional`` for all three because an empty ``Message()`` can
    be built; a polled batch is typed once, at the seam (:func:`polled`), so the code that
    reads records needs no check per use. Implemented by ``confluent_kafka.Message`` and
    :class:`sdk.testing.fakes.FakeMessage`.
    """

    def topic(self) -> str:
        """The topic."""
        ...

    def partition(self) -> int:
        """The partition."""
        ...

    def offset(self) -> int:
        """The offset (of a delivery report that failed: ``OFFSET_INVALID``)."""
        ...

    def key(self) -> bytes | None:
        """The raw key."""
        ...

    def value(self) -> bytes | None:
        """The raw value."""
        ...

    def headers(self) -> list[tuple[str, bytes | None]] | None:
        """The headers in broker order (None when there are none)."""
        ...

    def error(self) -> KafkaError | None:
        """The error of a delivery report (None for a record)."""
        ...

    def timestamp(self) -> tuple[int, int]:
        """``(timestamp type, milliseconds since the epoch)``."""
        ...

    def delivery_count(self) -> int | None:
        """How often a share group delivered the record (None outside a share group)."""
        ...

    def __len__(self) -> int:
        """The size of the value in bytes."""
        ...


def polled(messages: list[Message]) -> list[KafkaMessage]:
    """Messages a client returned, typed as what librdkafka guarantees (:class:`KafkaMessage`).

    It checks nothing: it runs once per batch on the hot path.
    """
    return cast("list[KafkaMessage]", messages)


DeliveryCallback: TypeAlias = Callable[[KafkaError | None, KafkaMessage], None]
"""``on_delivery(err, msg)``: librdkafka's delivery report of one produced record."""
