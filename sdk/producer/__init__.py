"""The SDK producer: guarantee profiles applied to a held ``confluent_kafka.Producer``."""

from sdk.producer._producer import Producer, ProducerState
from sdk.producer._records import DeliveryHandle, ProducerRecord, RecordMetadata

__all__ = ["DeliveryHandle", "Producer", "ProducerRecord", "ProducerState", "RecordMetadata"]
