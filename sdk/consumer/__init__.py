"""The SDK consumer: at-most-once and at-least-once commit ordering over confluent-kafka.

Exactly-once consumption goes through :class:`sdk.processor.Processor` (offsets must be part of
the producer's transaction).
"""

from sdk.consumer._consumer import Consumer
from sdk.consumer._offsets import AckTracker
from sdk.consumer._records import (
    BatchRecordHandler,
    ConsumerRecord,
    ConsumerState,
    ConsumerStats,
    RecordHandler,
)

__all__ = [
    "AckTracker",
    "BatchRecordHandler",
    "Consumer",
    "ConsumerRecord",
    "ConsumerState",
    "ConsumerStats",
    "RecordHandler",
]
