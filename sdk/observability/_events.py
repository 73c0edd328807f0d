"""The metric hooks of :class:`~sdk.observability.Telemetry` (counters, histograms, lag)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Literal, get_args

from opentelemetry import metrics
from opentelemetry.metrics import MeterProvider
from opentelemetry.util.types import AttributeValue

from sdk.errors import ConfigurationError
from sdk.observability import _conventions as c
from sdk.observability._metrics import Instruments
from sdk.observability._stats import LagTable, PartitionLag

__all__ = ["RECHECK_S", "MetricHooks", "RebalanceKind", "Safeguard", "attributes"]

RebalanceKind = Literal["assigned", "revoked", "lost"]
_KINDS: tuple[str, ...] = get_args(RebalanceKind)

Safeguard = Literal[
    "unowned_batch", "redelivered", "stalled_call", "slow_handler", "ack_refused", "ack_failed"
]
"""``unowned_batch``: an at_most_once batch was not handled because its pre-handling commit was
refused or the group session was lost around it (sdk/consumer/_at_most_once.py).
``redelivered``: at_most_once records that the client delivered again below the position
already committed before handling were dropped (sdk/consumer/_at_most_once.py).
``stalled_call``: a transactional call ignored its timeout and its producer was abandoned
(librdkafka #5456). Queues (sdk.queue):
``slow_handler``: a handler ran longer than the record's acquisition lock; ``ack_refused``: an
at_most_once acknowledgement was refused, so the records were not handled; ``ack_failed``: the
broker refused acknowledgements sent after handling (their records are delivered again)."""
_SAFEGUARDS: tuple[str, ...] = get_args(Safeguard)
RECHECK_S = 1.0  # how often the no-SDK path looks whether a global provider was installed
_log = logging.getLogger("sdk.observability")

_PLACEHOLDER_METER_PROVIDERS: tuple[type, ...] = (metrics.NoOpMeterProvider,)
try:  # the API's placeholder until set_meter_provider(); private, hence the fallback
    from opentelemetry.metrics._internal import _ProxyMeterProvider

    _PLACEHOLDER_METER_PROVIDERS += (_ProxyMeterProvider,)
except ImportError:  # pragma: no cover - a future API layout: only NoOp counts as no SDK
    pass


def _real_meter_provider(provider: object) -> bool:
    return not isinstance(provider, _PLACEHOLDER_METER_PROVIDERS)


class MetricHooks:
    """Metric hooks; every one is a cheap return until a meter provider is installed.

    Args:
        meter_provider: Meter provider (default: the global one, resolved lazily).
        lag_ttl_s: Forget a client's lag after this long without statistics.
    """

    def __init__(self, meter_provider: MeterProvider | None, lag_ttl_s: float) -> None:
        meter = metrics.get_meter(c.INSTRUMENTATION_NAME, meter_provider=meter_provider)
        self._fixed_metrics = meter_provider is not None
        self._metrics = meter_provider is not None and _real_meter_provider(meter_provider)
        self._next_metrics_check = 0.0
        self._lag = LagTable(lag_ttl_s)
        self.instruments = Instruments(meter, self._lag)

    def metrics_enabled(self) -> bool:
        """Whether a real meter provider is installed (explicit, or the global one by now)."""
        if self._metrics or self._fixed_metrics:
            return self._metrics
        now = time.monotonic()
        if now >= self._next_metrics_check:
            self._next_metrics_check = now + RECHECK_S
            self._metrics = _real_meter_provider(metrics.get_meter_provider())
        return self._metrics

    def sent(self, topic: str, count: int = 1, *, partition: int | None = None) -> None:
        """Count ``count`` records handed to the producer (``send_span`` does this itself)."""
        if not self.metrics_enabled():
            return
        self.instruments.sent.add(count, attributes(topic, partition))

    def delivered(self, topic: str, partition: int, latency_s: float | None = None) -> None:
        """Count one acknowledged record; record its produce → delivery-report latency."""
        if not self.metrics_enabled():
            return
        attrs = attributes(topic, partition)
        self.instruments.delivered.add(1, attrs)
        if latency_s is not None:
            self.instruments.delivery_duration.record(latency_s, attrs)

    def delivery_failed(self, topic: str, error_type: str, partition: int | None = None) -> None:
        """Count one record whose delivery report carried an error.

        ``error_type`` is its error code name (e.g. ``MSG_SIZE_TOO_LARGE``) or SdkError class.
        """
        if not self.metrics_enabled():
            return
        attrs = attributes(topic, partition)
        attrs[c.ERROR_TYPE] = error_type
        self.instruments.delivery_failed.add(1, attrs)

    def handler_latency(
        self,
        topic: str,
        partition: int | None,
        duration_s: float,
        *,
        group: str | None = None,
        error_type: str | None = None,
    ) -> None:
        """Record one handler run (``process_span`` does this itself)."""
        if not self.metrics_enabled():
            return
        attrs = attributes(topic, partition, group)
        if error_type is not None:
            attrs[c.ERROR_TYPE] = error_type
        self.instruments.process_duration.record(duration_s, attrs)

    def retry(self, operation: str, count: int = 1) -> None:
        """Count a retried call; ``operation`` is a fixed name such as ``commit_transaction``."""
        if not self.metrics_enabled():
            return
        self.instruments.retries.add(count, {c.RETRY_OPERATION: operation})

    def dead_lettered(
        self, topic: str, dlq_topic: str, count: int = 1, error_type: str | None = None
    ) -> None:
        """Count ``count`` input records of ``topic`` sent to ``dlq_topic``.

        :class:`~sdk.observability.Telemetry` also adds a ``kafka_semantics.dead_lettered``
        event (with ``error.type``) to the current span.
        """
        if not self.metrics_enabled():
            return
        attrs = attributes(topic, None)
        attrs["kafka_semantics.dlq.topic"] = dlq_topic
        self.instruments.dead_lettered.add(count, attrs)

    def rebalance(self, kind: RebalanceKind, partitions: int = 0) -> None:
        """Count one rebalance callback and log it.

        Raises:
            ConfigurationError: ``kind`` is not assigned, revoked or lost.
        """
        if kind not in _KINDS:
            raise ConfigurationError(
                f"rebalance kind {kind!r}: valid: {', '.join(_KINDS)}", field="kind"
            )
        if self.metrics_enabled():
            attrs = {c.MESSAGING_SYSTEM: "kafka", c.REBALANCE_KIND: kind}
            self.instruments.rebalances.add(1, attrs)
        _log.info(
            "rebalance: %s %d partitions",
            kind,
            partitions,
            extra={"rebalance": kind, "partitions": partitions},
        )

    def safeguard(self, name: Safeguard, detail: str = "") -> None:
        """Count one safeguard stepping in and log it as a warning (worth an alert).

        Raises:
            ConfigurationError: ``name`` is not a known safeguard.
        """
        if name not in _SAFEGUARDS:
            raise ConfigurationError(
                f"safeguard {name!r}: valid: {', '.join(_SAFEGUARDS)}", field="name"
            )
        if self.metrics_enabled():
            self.instruments.safeguards.add(1, {c.MESSAGING_SYSTEM: "kafka", c.SAFEGUARD: name})
        _log.warning("safeguard %s: %s", name, detail, extra={"safeguard": name})

    def record_stats(self, stats_json: str | bytes, group: str | None = None) -> None:
        """Take one librdkafka statistics JSON (``stats_cb``); feeds the consumer-lag gauge.

        Never raises (it runs inside librdkafka's callback): a malformed document is logged.
        """
        try:
            self._lag.update(stats_json, group)
        except (ValueError, TypeError) as exc:
            _log.warning("librdkafka statistics ignored: %s", exc)

    def stats_callback(self, group: str | None = None) -> Callable[[str], None]:
        """A ``stats_cb`` for a confluent-kafka config (set ``statistics.interval.ms`` too)."""
        return functools.partial(self.record_stats, group=group)

    def lag(self) -> list[PartitionLag]:
        """The consumer lag last reported per partition (what the gauge observes)."""
        return list(self._lag.current())


def attributes(
    topic: str, partition: int | None, group: str | None = None
) -> dict[str, AttributeValue]:
    """Metric attributes: system, topic, partition (if known), group (if given)."""
    attrs: dict[str, AttributeValue] = {
        c.MESSAGING_SYSTEM: "kafka",
        c.MESSAGING_DESTINATION_NAME: topic,
    }
    if partition is not None and partition >= 0:
        attrs[c.MESSAGING_DESTINATION_PARTITION_ID] = str(partition)
    if group is not None:
        attrs[c.MESSAGING_CONSUMER_GROUP_NAME] = group
    return attrs
