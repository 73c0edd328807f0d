"""The SDK producer: guarantee profiles applied to a held ``confluent_kafka.Producer``."""

from typing import Any

from sdk._deprecation import deprecated_name
from sdk.lifecycle import Lifecycle
from sdk.producer._producer import Producer
from sdk.producer._records import DeliveryHandle, ProducerRecord, RecordMetadata

__all__ = ["DeliveryHandle", "Producer", "ProducerRecord", "RecordMetadata"]

_DEPRECATED = {"ProducerState": ("use sdk.lifecycle.Lifecycle", Lifecycle)}


def __getattr__(name: str) -> Any:
    """``ProducerState``: deprecated, removed in 0.3; it is :class:`sdk.lifecycle.Lifecycle`."""
    return deprecated_name(__name__, name, _DEPRECATED)
