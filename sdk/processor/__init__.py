"""Exactly-once (or at-least/at-most-once) read-process-write loop over confluent-kafka."""

from typing import Any

from sdk import failure
from sdk._deprecation import deprecated_name
from sdk.lifecycle import Lifecycle
from sdk.processor import _records
from sdk.processor._processor import Processor
from sdk.processor._progress import Progress
from sdk.processor._records import OutputRecord, ProcessorStats

__all__ = ["OutputRecord", "Processor", "ProcessorStats", "Progress"]

_TYPING = (
    "it is no longer exported: a handler is any callable taking {} and returning OutputRecords"
)
_DEPRECATED: dict[str, tuple[str, object]] = {
    "ProcessorState": ("use sdk.lifecycle.Lifecycle", Lifecycle),
    "HandlerRunner": ("use sdk.failure.HandlerRunner", failure.HandlerRunner),
    "dead_letter": ("use sdk.failure.dead_letter", failure.dead_letter),
    "Handler": (_TYPING.format("a ConsumerRecord"), _records.Handler),
    "BatchHandler": (_TYPING.format("a list of ConsumerRecords"), _records.BatchHandler),
}


def __getattr__(name: str) -> Any:
    """Deprecated names, removed in 0.3.

    ``ProcessorState`` is :class:`sdk.lifecycle.Lifecycle`; ``HandlerRunner`` and
    ``dead_letter`` are :mod:`sdk.failure`'s; ``Handler`` and ``BatchHandler`` are no longer
    exported.
    """
    return deprecated_name(__name__, name, _DEPRECATED)
