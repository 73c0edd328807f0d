"""Exactly-once (or at-least/at-most-once) read-process-write loop over confluent-kafka."""

from typing import Any

from sdk._deprecation import deprecated_name
from sdk.failure import HandlerRunner, dead_letter
from sdk.lifecycle import Lifecycle
from sdk.processor._processor import Processor
from sdk.processor._progress import Progress
from sdk.processor._records import (
    BatchHandler,
    Handler,
    OutputRecord,
    ProcessorStats,
)

__all__ = [
    "BatchHandler",
    "Handler",
    "HandlerRunner",
    "OutputRecord",
    "Processor",
    "ProcessorStats",
    "Progress",
    "dead_letter",
]

_DEPRECATED = {"ProcessorState": ("use sdk.lifecycle.Lifecycle", Lifecycle)}


def __getattr__(name: str) -> Any:
    """``ProcessorState``: deprecated, removed in 0.3; it is :class:`sdk.lifecycle.Lifecycle`."""
    return deprecated_name(__name__, name, _DEPRECATED)
