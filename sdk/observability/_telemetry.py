"""Telemetry: the hooks the producer, consumer and processor call (opentelemetry-api only)."""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Literal, get_args

from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.propagators.textmap import TextMapPropagator
from opentelemetry.trace import Link, Span, SpanKind, TracerProvider

from sdk.errors import ConfigurationError
from sdk.observability import _conventions as c
from sdk.observability._headers import (
    HeaderList,
    Headers,
    HeadersGetter,
    HeadersSetter,
    as_header_list,
)
from sdk.observability._metrics import Instruments
from sdk.observability._stats import LagTable, PartitionLag
from sdk.observability._transaction import TransactionSpan

__all__ = ["RebalanceKind", "Telemetry"]

RebalanceKind = Literal["assigned", "revoked", "lost"]
_KINDS: tuple[str, ...] = get_args(RebalanceKind)
_GETTER = HeadersGetter()
_SETTER = HeadersSetter()
_MAX_BATCH_LINKS = 128  # the SDK's default SpanLimits.max_links
_log = logging.getLogger("sdk.observability")
_default: Telemetry | None = None
_default_lock = threading.Lock()


def _key_text(key: bytes | str | None) -> str | None:
    if key is None or isinstance(key, str):
        return key
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError:
        return None  # no canonical string form: the convention says leave it out


class Telemetry:
    """Tracing, metrics and trace-context propagation for Kafka records.

    Built on opentelemetry-api only: until the application installs an SDK (a tracer and meter
    provider), every span is non-recording and every instrument a no-op; the W3C trace context
    of an input record is still carried to the output records (the API propagates the parent's
    span context even without an SDK).

    Args:
        tracer_provider: Tracer provider (default: the global one, resolved lazily).
        meter_provider: Meter provider (default: the global one, resolved lazily).
        propagator: Text-map propagator (default: the global one at each call, W3C
            traceparent/tracestate plus baggage unless the application changed it).
        record_keys: Put ``messaging.kafka.message.key`` on spans (turn off if keys are
            sensitive). Keys never go into metrics.
        parent_from_headers: Parent a process span to the producer's span context found in
            the record headers (one trace from producer to consumer). False: start it under
            the current context and only *link* to the producer's context, as the messaging
            conventions prefer for consumers that own their trace.
        lag_ttl_s: Forget a client's lag after this long without statistics.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        propagator: TextMapPropagator | None = None,
        record_keys: bool = True,
        parent_from_headers: bool = True,
        lag_ttl_s: float = 60.0,
    ) -> None:
        self._tracer = trace.get_tracer(c.INSTRUMENTATION_NAME, tracer_provider=tracer_provider)
        meter = metrics.get_meter(c.INSTRUMENTATION_NAME, meter_provider=meter_provider)
        self._propagator = propagator
        self._record_keys = record_keys
        self._parent_from_headers = parent_from_headers
        self._lag = LagTable(lag_ttl_s)
        self.instruments = Instruments(meter, self._lag)

    @classmethod
    def default(cls) -> Telemetry:
        """The process-wide instance on the global providers (they may be installed later)."""
        global _default
        with _default_lock:
            if _default is None:
                _default = cls()
            return _default

    # ------------------------------------------------------------------ propagation
    def _textmap(self) -> TextMapPropagator:
        return self._propagator or propagate.get_global_textmap()

    def inject(self, headers: Headers = None, context: Context | None = None) -> HeaderList:
        """Return a copy of ``headers`` with the trace context (``traceparent``...) written in.

        Existing propagation headers are replaced, other headers kept in order. With no active
        span (or a no-op SDK and no parent) nothing is added.

        Args:
            headers: Record headers (list of pairs, dict or None).
            context: Context to inject (default: the current one, e.g. inside ``send_span``).
        """
        out = as_header_list(headers)
        self._textmap().inject(out, context=context, setter=_SETTER)
        return out

    def extract(self, headers: Headers) -> Context:
        """Return the context carried by record ``headers`` (an empty one if none)."""
        return self._textmap().extract(as_header_list(headers), getter=_GETTER)

    # ------------------------------------------------------------------ producer
    @contextmanager
    def send_span(
        self,
        topic: str,
        partition: int | None = None,
        key: bytes | str | None = None,
        *,
        tombstone: bool = False,
    ) -> Iterator[Span]:
        """A PRODUCER span ``send <topic>``, current inside the block; inject inside it.

        Counts ``messaging.client.sent.messages`` when the block exits without an exception.

        Yields:
            The span (non-recording without an SDK).
        """
        attrs: dict[str, Any] = {
            c.MESSAGING_SYSTEM: "kafka",
            c.MESSAGING_OPERATION_TYPE: "send",
            c.MESSAGING_OPERATION_NAME: "send",
            c.MESSAGING_DESTINATION_NAME: topic,
        }
        if partition is not None and partition >= 0:
            attrs[c.MESSAGING_DESTINATION_PARTITION_ID] = str(partition)
        if self._record_keys and (text := _key_text(key)) is not None:
            attrs[c.MESSAGING_KAFKA_MESSAGE_KEY] = text
        if tombstone:
            attrs[c.MESSAGING_KAFKA_MESSAGE_TOMBSTONE] = True
        with self._tracer.start_as_current_span(
            f"send {topic}", kind=SpanKind.PRODUCER, attributes=attrs
        ) as span:
            try:
                yield span
            except BaseException as exc:
                span.set_attribute(c.ERROR_TYPE, type(exc).__name__)
                raise
        self.sent(topic, partition=partition)

    def sent(self, topic: str, count: int = 1, *, partition: int | None = None) -> None:
        """Count ``count`` records handed to the producer (``send_span`` does this itself)."""
        self.instruments.sent.add(count, _attrs(topic, partition))

    def delivered(self, topic: str, partition: int, latency_s: float | None = None) -> None:
        """Count one acknowledged record; record its produce → delivery-report latency."""
        attrs = _attrs(topic, partition)
        self.instruments.delivered.add(1, attrs)
        if latency_s is not None:
            self.instruments.delivery_duration.record(latency_s, attrs)

    def delivery_failed(self, topic: str, error_type: str, partition: int | None = None) -> None:
        """Count one record whose delivery report carried an error.

        ``error_type`` is its error code name (e.g. ``MSG_SIZE_TOO_LARGE``) or SdkError class.
        """
        attrs = _attrs(topic, partition)
        attrs[c.ERROR_TYPE] = error_type
        self.instruments.delivery_failed.add(1, attrs)

    # ------------------------------------------------------------------ consumer
    @contextmanager
    def process_span(
        self,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | str | None = None,
        group: str | None = None,
        headers: Headers = None,
        *,
        transaction: TransactionSpan | None = None,
    ) -> Iterator[Span]:
        """A CONSUMER span ``process <topic>`` around the handling of one record.

        Its parent is the producer's context from ``headers`` (see ``parent_from_headers``);
        it links to ``transaction``'s span when given. On exit it records the handler latency
        (``messaging.process.duration``, with ``error.type`` if the block raised) and counts
        ``messaging.client.consumed.messages``.

        Yields:
            The span (current inside the block, so produced outputs join the trace).
        """
        attrs: dict[str, Any] = {
            c.MESSAGING_SYSTEM: "kafka",
            c.MESSAGING_OPERATION_TYPE: "process",
            c.MESSAGING_OPERATION_NAME: "process",
            c.MESSAGING_DESTINATION_NAME: topic,
            c.MESSAGING_DESTINATION_PARTITION_ID: str(partition),
            c.MESSAGING_KAFKA_OFFSET: offset,
        }
        if group is not None:
            attrs[c.MESSAGING_CONSUMER_GROUP_NAME] = group
        if self._record_keys and (text := _key_text(key)) is not None:
            attrs[c.MESSAGING_KAFKA_MESSAGE_KEY] = text
        links: list[Link] = []
        parent: Context | None = None
        if headers:
            carried = self.extract(headers)
            ctx = trace.get_current_span(carried).get_span_context()
            if ctx.is_valid:
                if self._parent_from_headers:
                    parent = carried
                else:
                    links.append(Link(ctx))
        if transaction is not None and transaction.span_context.is_valid:
            links.append(Link(transaction.span_context))
        with self._timed_span(f"process {topic}", attrs, parent, links, topic, partition, group):
            yield trace.get_current_span()

    @contextmanager
    def batch_process_span(
        self,
        records: Sequence[Any],
        group: str | None = None,
        *,
        transaction: TransactionSpan | None = None,
    ) -> Iterator[Span]:
        """One CONSUMER span for a batch of ``confluent_kafka.Message`` objects.

        The span links to the producer context of each record (first 128), records
        ``messaging.batch.message_count``, and its latency is recorded once for the batch.

        Yields:
            The span.
        """
        topics = sorted({m.topic() for m in records})
        topic = topics[0] if len(topics) == 1 else None
        attrs: dict[str, Any] = {
            c.MESSAGING_SYSTEM: "kafka",
            c.MESSAGING_OPERATION_TYPE: "process",
            c.MESSAGING_OPERATION_NAME: "process",
            c.MESSAGING_BATCH_MESSAGE_COUNT: len(records),
        }
        if topic is not None:
            attrs[c.MESSAGING_DESTINATION_NAME] = topic
        if group is not None:
            attrs[c.MESSAGING_CONSUMER_GROUP_NAME] = group
        links: list[Link] = []
        if transaction is not None and transaction.span_context.is_valid:
            links.append(Link(transaction.span_context))
        for m in records:
            if len(links) >= _MAX_BATCH_LINKS:
                break
            if m.headers():
                ctx = trace.get_current_span(self.extract(m.headers())).get_span_context()
                if ctx.is_valid:
                    links.append(Link(ctx))
        name = f"process {topic}" if topic is not None else "process"
        with self._timed_span(name, attrs, None, links, topic or "", None, group, len(records)):
            yield trace.get_current_span()

    @contextmanager
    def _timed_span(
        self,
        name: str,
        attrs: dict[str, Any],
        parent: Context | None,
        links: list[Link],
        topic: str,
        partition: int | None,
        group: str | None,
        count: int = 1,
    ) -> Iterator[None]:
        start = time.perf_counter()
        error: str | None = None
        with self._tracer.start_as_current_span(
            name, context=parent, kind=SpanKind.CONSUMER, attributes=attrs, links=links
        ) as span:
            try:
                yield
            except BaseException as exc:
                error = type(exc).__name__
                span.set_attribute(c.ERROR_TYPE, error)
                raise
            finally:
                self.handler_latency(
                    topic, partition, time.perf_counter() - start, group=group, error_type=error
                )
                self.instruments.consumed.add(count, _attrs(topic, partition, group))

    def handler_latency(
        self,
        topic: str,
        partition: int | None,
        seconds: float,
        *,
        group: str | None = None,
        error_type: str | None = None,
    ) -> None:
        """Record one handler run (``process_span`` does this itself)."""
        attrs = _attrs(topic, partition, group)
        if error_type is not None:
            attrs[c.ERROR_TYPE] = error_type
        self.instruments.process_duration.record(seconds, attrs)

    # ------------------------------------------------------------------ transactions
    def start_transaction(self, transactional_id: str) -> TransactionSpan:
        """Begin a ``kafka.transaction`` span (not made current); end it with ``.end(outcome)``."""
        span = self._tracer.start_span(
            "kafka.transaction",
            kind=SpanKind.INTERNAL,
            attributes={c.MESSAGING_SYSTEM: "kafka", c.TRANSACTIONAL_ID: transactional_id},
        )
        return TransactionSpan(span, self.instruments, transactional_id)

    @contextmanager
    def transaction_span(self, transactional_id: str) -> Iterator[TransactionSpan]:
        """A transaction span, current inside the block (send spans become its children).

        Call ``set_outcome("committed"|"aborted", records=n)`` inside the block; if the block
        raises first the outcome is ``unknown`` with the error recorded.

        Yields:
            The :class:`TransactionSpan`.
        """
        tx = self.start_transaction(transactional_id)
        token = otel_context.attach(trace.set_span_in_context(tx.span))
        try:
            yield tx
        except BaseException as exc:
            tx.end("unknown", error=exc)
            raise
        finally:
            otel_context.detach(token)
            tx.end("unknown")

    # ------------------------------------------------------------------ other events
    def retry(self, operation: str, count: int = 1) -> None:
        """Count a retried call; ``operation`` is a fixed name such as ``commit_transaction``."""
        self.instruments.retries.add(count, {c.RETRY_OPERATION: operation})

    def dead_lettered(self, topic: str, dlq_topic: str, count: int = 1) -> None:
        """Count ``count`` input records of ``topic`` sent to ``dlq_topic``."""
        attrs = _attrs(topic, None)
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
        self.instruments.rebalances.add(1, {c.MESSAGING_SYSTEM: "kafka", c.REBALANCE_KIND: kind})
        _log.info(
            "rebalance: %s %d partitions",
            kind,
            partitions,
            extra={"rebalance": kind, "partitions": partitions},
        )

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


def _attrs(topic: str, partition: int | None, group: str | None = None) -> dict[str, Any]:
    attrs: dict[str, Any] = {c.MESSAGING_SYSTEM: "kafka", c.MESSAGING_DESTINATION_NAME: topic}
    if partition is not None and partition >= 0:
        attrs[c.MESSAGING_DESTINATION_PARTITION_ID] = str(partition)
    if group is not None:
        attrs[c.MESSAGING_CONSUMER_GROUP_NAME] = group
    return attrs
