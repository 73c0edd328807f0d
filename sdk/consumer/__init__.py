"""The SDK consumer: at-most-once and at-least-once commit ordering over confluent-kafka.

Exactly-once consumption goes through :class:`sdk.processor.Processor` (offsets must be part of
the producer's transaction).
"""

from typing import Any

from sdk._deprecation import deprecated_name
from sdk.consumer._consumer import Consumer
from sdk.consumer._offsets import AckTracker
from sdk.consumer._records import (
    BatchRecordHandler,
    ConsumerRecord,
    ConsumerStats,
    RecordHandler,
)
from sdk.lifecycle import Lifecycle

__all__ = [
    "AckTracker",
    "BatchRecordHandler",
    "Consumer",
    "ConsumerRecord",
    "ConsumerStats",
    "RecordHandler",
]

_DEPRECATED = {"ConsumerState": ("use sdk.lifecycle.Lifecycle", Lifecycle)}


def __getattr__(name: str) -> Any:
    """``ConsumerState``: deprecated, removed in 0.3; it is :class:`sdk.lifecycle.Lifecycle`."""
    return deprecated_name(__name__, name, _DEPRECATED)
