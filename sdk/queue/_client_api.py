"""What the queue needs of confluent-kafka, and a clear refusal on a client that lacks it.

``ShareConsumer``, ``AcknowledgeType`` and ``Message.delivery_count`` arrived in
confluent-kafka 2.15.0. On an older client ``sdk.queue`` still imports (so does ``sdk``), and
creating the share consumer raises a :class:`~sdk.errors.ConfigurationError` naming both
versions, instead of an ``ImportError`` at ``import sdk``.
"""

from __future__ import annotations

import enum
from typing import Any

import confluent_kafka

from sdk.errors import ConfigurationError

__all__ = ["MIN_CLIENT", "AcknowledgeType", "delivery_count", "share_consumer"]

MIN_CLIENT = "2.15.0"
"""The first confluent-kafka release with ``ShareConsumer`` (measured: docs/compatibility.md)."""


class _AcknowledgeType(enum.IntEnum):  # stands in on older clients, which cannot use it anyway
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


AcknowledgeType: Any = getattr(confluent_kafka, "AcknowledgeType", _AcknowledgeType)


def _no_delivery_count(message: Any) -> int | None:
    return None


delivery_count: Any = getattr(confluent_kafka.Message, "delivery_count", _no_delivery_count)


def share_consumer(config: dict[str, Any]) -> Any:
    """A ``confluent_kafka.ShareConsumer`` for ``config``.

    Raises:
        ConfigurationError: The installed confluent-kafka has no ``ShareConsumer``.
    """
    cls = getattr(confluent_kafka, "ShareConsumer", None)
    if cls is None:
        raise ConfigurationError(
            f"a queue (sdk.queue: share groups, KIP-932) needs confluent-kafka {MIN_CLIENT} or "
            f"later (ShareConsumer); the installed confluent-kafka is "
            f"{confluent_kafka.__version__}: pip install 'confluent-kafka>={MIN_CLIENT}'"
        )
    return cls(config)
