"""The SDK consumer: at-most-once and at-least-once commit ordering over confluent-kafka.

Exactly-once consumption goes through :class:`sdk.processor.Processor` (offsets must be part of
the producer's transaction).
"""

from typing import Any

from sdk._deprecation import deprecated_name
from sdk.consumer import _offsets, _records
from sdk.consumer._consumer import Consumer
from sdk.consumer._records import ConsumerRecord, ConsumerStats
from sdk.consumer._scheduler import Ordering
from sdk.lifecycle import Lifecycle

__all__ = ["Consumer", "ConsumerRecord", "ConsumerStats", "Ordering"]

_TYPING = "it is no longer exported: a handler is any callable taking {}"
_DEPRECATED: dict[str, tuple[str, object]] = {
    "ConsumerState": ("use sdk.lifecycle.Lifecycle", Lifecycle),
    "AckTracker": ("it is internal to the Consumer and no longer exported", _offsets.AckTracker),
    "RecordHandler": (_TYPING.format("a ConsumerRecord"), _records.RecordHandler),
    "BatchRecordHandler": (
        _TYPING.format("a list of ConsumerRecords"),
        _records.BatchRecordHandler,
    ),
}


def __getattr__(name: str) -> Any:
    """Deprecated names, removed in 0.3.

    ``ConsumerState`` is :class:`sdk.lifecycle.Lifecycle`; ``AckTracker``, ``RecordHandler`` and
    ``BatchRecordHandler`` are no longer exported.
    """
    return deprecated_name(__name__, name, _DEPRECATED)
