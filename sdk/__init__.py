"""kafka-semantics: delivery guarantees for Apache Kafka, chosen by profile.

The SDK wraps confluent-kafka (by composition) and fixes every librdkafka setting, commit order
and transaction step that a guarantee (at-most-once, at-least-once, exactly-once) needs.
"""

import logging

from sdk.errors import SdkError

logging.getLogger("sdk").addHandler(logging.NullHandler())  # the application configures logging

__version__ = "0.1.0"

__all__ = ["SdkError", "__version__"]
