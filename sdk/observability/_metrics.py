"""The metric instruments of :class:`~sdk.observability.Telemetry` (created once per meter)."""

from __future__ import annotations

from collections.abc import Iterable

from opentelemetry.metrics import CallbackOptions, Meter, Observation

from sdk.observability import _conventions as c
from sdk.observability._stats import LagTable

__all__ = ["Instruments"]

# seconds: 0.5 ms .. 30 s; covers a local acks=all round trip up to a stalled transaction.
_LATENCY_BUCKETS = (
    0.0005,
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)


class Instruments:
    """Counters, histograms and the lag gauge; attributes are topic/partition/kind only."""

    def __init__(self, meter: Meter, lag: LagTable) -> None:
        self._lag = lag
        self.sent = meter.create_counter(
            c.METRIC_SENT, unit="{message}", description="Records handed to the producer."
        )
        self.delivered = meter.create_counter(
            c.METRIC_DELIVERED, unit="{message}", description="Records acknowledged by Kafka."
        )
        self.delivery_failed = meter.create_counter(
            c.METRIC_DELIVERY_FAILED,
            unit="{message}",
            description="Records whose delivery report carried an error.",
        )
        self.delivery_duration = meter.create_histogram(
            c.METRIC_DELIVERY_DURATION,
            unit="s",
            description="From produce() to the delivery report.",
            explicit_bucket_boundaries_advisory=_LATENCY_BUCKETS,
        )
        self.consumed = meter.create_counter(
            c.METRIC_CONSUMED, unit="{message}", description="Records given to the handler."
        )
        self.process_duration = meter.create_histogram(
            c.METRIC_PROCESS_DURATION,
            unit="s",
            description="Handler latency per record (or per batch).",
            explicit_bucket_boundaries_advisory=_LATENCY_BUCKETS,
        )
        self.retries = meter.create_counter(
            c.METRIC_RETRIES, unit="{retry}", description="Retried Kafka calls and handler runs."
        )
        self.dead_lettered = meter.create_counter(
            c.METRIC_DEAD_LETTERED,
            unit="{message}",
            description="Input records sent to a dead-letter topic.",
        )
        self.transactions = meter.create_counter(
            c.METRIC_TRANSACTIONS,
            unit="{transaction}",
            description="Transactions ended, by outcome (committed/aborted/unknown).",
        )
        self.transaction_duration = meter.create_histogram(
            c.METRIC_TRANSACTION_DURATION,
            unit="s",
            description="From begin_transaction to commit/abort.",
            explicit_bucket_boundaries_advisory=_LATENCY_BUCKETS,
        )
        self.rebalances = meter.create_counter(
            c.METRIC_REBALANCES,
            unit="{rebalance}",
            description="Rebalance callbacks, by kind (assigned/revoked/lost).",
        )
        self.safeguards = meter.create_counter(
            c.METRIC_SAFEGUARDS,
            unit="{event}",
            description=(
                "Times a guarantee's safeguard stepped in (unowned_batch, redelivered, "
                "stalled_call; queues: slow_handler, ack_refused, ack_failed)."
            ),
        )
        self.lag = meter.create_observable_gauge(
            c.METRIC_CONSUMER_LAG,
            callbacks=[self._observe_lag],
            unit="{message}",
            description="consumer_lag from librdkafka statistics (statistics.interval.ms).",
        )

    def _observe_lag(self, options: CallbackOptions) -> Iterable[Observation]:
        for p in self._lag.current():
            attrs: dict[str, str] = {
                c.MESSAGING_SYSTEM: "kafka",
                c.MESSAGING_DESTINATION_NAME: p.topic,
                c.MESSAGING_DESTINATION_PARTITION_ID: str(p.partition),
            }
            if p.group is not None:
                attrs[c.MESSAGING_CONSUMER_GROUP_NAME] = p.group
            yield Observation(p.lag, attrs)
