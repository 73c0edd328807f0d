"""OpenTelemetry tracing, metrics and structured logging for Kafka records (API only).

The SDK's clients call the small hook API of :class:`Telemetry`; nothing is recorded until the
application installs an OpenTelemetry SDK (tracer and meter providers). See
``docs/observability.md`` for span names, attributes, metrics and the cost of each hook.
"""

from typing import Any

from sdk._deprecation import deprecated_name
from sdk.observability import _logging
from sdk.observability._events import RebalanceKind
from sdk.observability._headers import HeaderList, HeadersLike
from sdk.observability._logging import get_logger, redact
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
    "redact",
]

_DEPRECATED: dict[str, tuple[str, object]] = {
    "Headers": ("use sdk.observability.HeadersLike", HeadersLike),
    "Outcome": ("use sdk.observability.TransactionOutcome", TransactionOutcome),
    "is_secret_key": (
        "it is no longer exported: redact(config) masks every secret key",
        _logging.is_secret_key,
    ),
}


def __getattr__(name: str) -> Any:
    """Deprecated names, removed in 0.3.

    ``Headers`` and ``Outcome`` are :data:`HeadersLike` and :data:`TransactionOutcome` now;
    ``is_secret_key`` is no longer exported.
    """
    return deprecated_name(__name__, name, _DEPRECATED)
