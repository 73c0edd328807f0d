"""Exactly-once (or at-least/at-most-once) read-process-write loop over confluent-kafka."""

from sdk.failure import HandlerRunner, dead_letter
from sdk.processor._processor import Processor
from sdk.processor._progress import Progress
from sdk.processor._records import (
    BatchHandler,
    Handler,
    OutputRecord,
    ProcessorState,
    ProcessorStats,
)

__all__ = [
    "BatchHandler",
    "Handler",
    "HandlerRunner",
    "OutputRecord",
    "Processor",
    "ProcessorState",
    "ProcessorStats",
    "Progress",
    "dead_letter",
]
