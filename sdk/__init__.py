"""kafka-semantics: delivery guarantees for Apache Kafka, chosen by profile.

The SDK wraps confluent-kafka (by composition) and fixes every librdkafka setting, commit order
and transaction step that a guarantee (at-most-once, at-least-once, exactly-once) needs::

    from sdk import Consumer, OutputRecord, Processor, Producer, SdkError, load_profiles

See docs/architecture.md for the core (one transactional session, one error seam) that the
Producer, the Consumer, the Processor and the Spark helpers compose.
"""

import logging

from sdk.consumer import Consumer, ConsumerRecord
from sdk.errors import SdkError
from sdk.processor import Processor
from sdk.producer import Producer
from sdk.profiles import (
    ConsumerProfile,
    Guarantee,
    ProcessingProfile,
    ProducerProfile,
    load_profiles,
)
from sdk.records import OutputRecord

logging.getLogger("sdk").addHandler(logging.NullHandler())  # the application configures logging

__version__ = "0.1.0"

__all__ = [
    "Consumer",
    "ConsumerProfile",
    "ConsumerRecord",
    "Guarantee",
    "OutputRecord",
    "ProcessingProfile",
    "Processor",
    "Producer",
    "ProducerProfile",
    "SdkError",
    "__version__",
    "load_profiles",
]
