"""What the queue needs of confluent-kafka, and a clear refusal on a client that lacks it.

``ShareConsumer``, ``AcknowledgeType`` and ``Message.delivery_count`` arrived in
confluent-kafka 2.15.0. On an older client ``sdk.queue`` still imports (so does ``sdk``), and
creating the share consumer raises a :class:`~sdk.errors.ConfigurationError` naming both
versions (:func:`sdk._client.share_consumer`), instead of an ``ImportError`` at ``import sdk``.
"""

from __future__ import annotations

import enum
from typing import Any

import confluent_kafka

from sdk._client import SHARE_CONSUMER_CLIENT

__all__ = ["MIN_CLIENT", "AcknowledgeType", "delivery_count"]

MIN_CLIENT = SHARE_CONSUMER_CLIENT
"""The first confluent-kafka release with ``ShareConsumer`` (``sdk._client.share_consumer``
refuses an older one)."""


class _AcknowledgeType(enum.IntEnum):  # stands in on older clients, which cannot use it anyway
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


AcknowledgeType: Any = getattr(confluent_kafka, "AcknowledgeType", _AcknowledgeType)


def _no_delivery_count(message: Any) -> int | None:
    return None


delivery_count: Any = getattr(confluent_kafka.Message, "delivery_count", _no_delivery_count)
