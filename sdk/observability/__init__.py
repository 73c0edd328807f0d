"""OpenTelemetry tracing, metrics and structured logging for Kafka records (API only).

The SDK's clients call the small hook API of :class:`Telemetry`; nothing is recorded until the
application installs an OpenTelemetry SDK (tracer and meter providers). See
``docs/observability.md`` for span names, attributes, metrics and the cost of each hook.
"""

from typing import Any

from sdk._deprecation import deprecated_name
from sdk.observability._events import RebalanceKind
from sdk.observability._headers import HeaderList, HeadersLike
from sdk.observability._logging import get_logger, is_secret_key, redact
from sdk.observability._stats import PartitionLag, consumer_lag
from sdk.observability._telemetry import Telemetry
from sdk.observability._transaction import TransactionOutcome, TransactionSpan

__all__ = [
    "HeaderList",
    "HeadersLike",
    "PartitionLag",
    "RebalanceKind",
    "Telemetry",
    "TransactionOutcome",
    "TransactionSpan",
    "consumer_lag",
    "get_logger",
    "is_secret_key",
    "redact",
]

_DEPRECATED = {
    "Headers": ("use sdk.observability.HeadersLike", HeadersLike),
    "Outcome": ("use sdk.observability.TransactionOutcome", TransactionOutcome),
}


def __getattr__(name: str) -> Any:
    """``Headers`` and ``Outcome``: deprecated, removed in 0.3.

    They are :data:`HeadersLike` and :data:`TransactionOutcome` now.
    """
    return deprecated_name(__name__, name, _DEPRECATED)
