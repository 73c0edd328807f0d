"""Names: OpenTelemetry messaging semantic conventions and this SDK's own metric names.

The messaging conventions are still "Development" status; the names below are those of
opentelemetry-semantic-conventions 0.66b2 (``messaging.kafka.offset`` replaced
``messaging.kafka.message.offset``, ``messaging.consumer.group.name`` replaced
``messaging.kafka.consumer.group``). They are written out here, not imported, because the
semantic-conventions package is not a dependency of opentelemetry-api.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ERROR_TYPE",
    "INSTRUMENTATION_NAME",
    "MESSAGING_BATCH_MESSAGE_COUNT",
    "MESSAGING_CONSUMER_GROUP_NAME",
    "MESSAGING_DESTINATION_NAME",
    "MESSAGING_DESTINATION_PARTITION_ID",
    "MESSAGING_KAFKA_MESSAGE_KEY",
    "MESSAGING_KAFKA_MESSAGE_TOMBSTONE",
    "MESSAGING_KAFKA_OFFSET",
    "MESSAGING_OPERATION_NAME",
    "MESSAGING_OPERATION_TYPE",
    "MESSAGING_SYSTEM",
    "METRIC_CONSUMED",
    "METRIC_CONSUMER_LAG",
    "METRIC_DEAD_LETTERED",
    "METRIC_DELIVERED",
    "METRIC_DELIVERY_DURATION",
    "METRIC_DELIVERY_FAILED",
    "METRIC_PROCESS_DURATION",
    "METRIC_REBALANCES",
    "METRIC_RETRIES",
    "METRIC_SAFEGUARDS",
    "METRIC_SENT",
    "METRIC_TRANSACTIONS",
    "METRIC_TRANSACTION_DURATION",
    "OUTCOME",
    "REBALANCE_KIND",
    "RETRY_OPERATION",
    "SAFEGUARD",
    "TRANSACTIONAL_ID",
    "TRANSACTION_INPUT_RECORDS",
]

INSTRUMENTATION_NAME: Final = "sdk.observability"

# --- span and metric attributes (semantic conventions)
MESSAGING_SYSTEM: Final = "messaging.system"
MESSAGING_OPERATION_TYPE: Final = "messaging.operation.type"
MESSAGING_OPERATION_NAME: Final = "messaging.operation.name"
MESSAGING_DESTINATION_NAME: Final = "messaging.destination.name"
MESSAGING_DESTINATION_PARTITION_ID: Final = "messaging.destination.partition.id"
MESSAGING_KAFKA_OFFSET: Final = "messaging.kafka.offset"
MESSAGING_KAFKA_MESSAGE_KEY: Final = "messaging.kafka.message.key"
MESSAGING_KAFKA_MESSAGE_TOMBSTONE: Final = "messaging.kafka.message.tombstone"
MESSAGING_CONSUMER_GROUP_NAME: Final = "messaging.consumer.group.name"
MESSAGING_BATCH_MESSAGE_COUNT: Final = "messaging.batch.message_count"
ERROR_TYPE: Final = "error.type"

# --- this SDK's attributes (no convention exists for Kafka transactions)
TRANSACTIONAL_ID: Final = "kafka_semantics.transactional_id"
TRANSACTION_INPUT_RECORDS: Final = "kafka_semantics.transaction.input_records"
OUTCOME: Final = "kafka_semantics.transaction.outcome"
REBALANCE_KIND: Final = "kafka_semantics.rebalance.kind"
RETRY_OPERATION: Final = "kafka_semantics.retry.operation"
SAFEGUARD: Final = "kafka_semantics.safeguard"

# --- metrics (semantic-convention names where one exists)
METRIC_SENT: Final = "messaging.client.sent.messages"
METRIC_CONSUMED: Final = "messaging.client.consumed.messages"
METRIC_PROCESS_DURATION: Final = "messaging.process.duration"
METRIC_DELIVERED: Final = "kafka_semantics.producer.delivered"
METRIC_DELIVERY_FAILED: Final = "kafka_semantics.producer.delivery_failed"
METRIC_DELIVERY_DURATION: Final = "kafka_semantics.producer.delivery.duration"
METRIC_RETRIES: Final = "kafka_semantics.retries"
METRIC_DEAD_LETTERED: Final = "kafka_semantics.dead_lettered"
METRIC_TRANSACTIONS: Final = "kafka_semantics.transactions"
METRIC_TRANSACTION_DURATION: Final = "kafka_semantics.transaction.duration"
METRIC_REBALANCES: Final = "kafka_semantics.rebalances"
METRIC_SAFEGUARDS: Final = "kafka_semantics.safeguards"
METRIC_CONSUMER_LAG: Final = "kafka_semantics.consumer.lag"
