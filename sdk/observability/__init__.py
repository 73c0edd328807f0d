"""OpenTelemetry tracing, metrics and structured logging for Kafka records (API only).

The SDK's clients call the small hook API of :class:`Telemetry`; nothing is recorded until the
application installs an OpenTelemetry SDK (tracer and meter providers). See
``docs/observability.md`` for span names, attributes, metrics and the cost of each hook.
"""

from sdk.observability._events import RebalanceKind
from sdk.observability._headers import HeaderList, Headers
from sdk.observability._logging import get_logger, is_secret_key, redact
from sdk.observability._stats import PartitionLag, consumer_lag
from sdk.observability._telemetry import Telemetry
from sdk.observability._transaction import Outcome, TransactionSpan

__all__ = [
    "HeaderList",
    "Headers",
    "Outcome",
    "PartitionLag",
    "RebalanceKind",
    "Telemetry",
    "TransactionSpan",
    "consumer_lag",
    "get_logger",
    "is_secret_key",
    "redact",
]
