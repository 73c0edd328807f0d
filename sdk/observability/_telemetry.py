"""Telemetry: the hooks the producer, consumer and processor call (opentelemetry-api only)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.metrics import MeterProvider
from opentelemetry.propagators.textmap import TextMapPropagator
from opentelemetry.trace import (
    INVALID_SPAN,
    Link,
    NoOpTracerProvider,
    ProxyTracerProvider,
    Span,
    SpanKind,
    TracerProvider,
)
from opentelemetry.util.types import AttributeValue

from sdk._message import KafkaMessage
from sdk.observability import _conventions as c
from sdk.observability._events import RECHECK_S, MetricHooks, attributes
from sdk.observability._headers import (
    HeaderList,
    HeadersGetter,
    HeadersLike,
    HeadersSetter,
    as_header_list,
)
from sdk.observability._nosdk import CARRIED, NOTHING, Carry, CountSent
from sdk.observability._transaction import TransactionSpan

__all__ = ["Telemetry"]

_GETTER = HeadersGetter()
_SETTER = HeadersSetter()
_MAX_BATCH_LINKS = 128  # the SDK's default SpanLimits.max_links
_default: Telemetry | None = None
_default_lock = threading.Lock()


def _real_tracer_provider(provider: object) -> bool:
    return not isinstance(provider, ProxyTracerProvider | NoOpTracerProvider)


def _key_text(key: bytes | str | None) -> str | None:
    if key is None or isinstance(key, str):
        return key
    try:
        return key.decode("utf-8")
    except UnicodeDecodeError:
        return None  # no canonical string form: the convention says leave it out


class Telemetry(MetricHooks):
    """Tracing, metrics and trace-context propagation for Kafka records.

    Built on opentelemetry-api only. Until the application installs an SDK (sets a tracer or
    meter provider) the hooks take a fast path: no span and no instrument is touched, and the
    propagation headers (``traceparent``, ``tracestate``, ``baggage``) of the record being
    processed are copied as they are into the headers its outputs get from :meth:`inject`, so
    a trace still crosses an uninstrumented processor. Global providers installed later are
    picked up within a second (they can be set only once, so an installed SDK stays on).

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
        super().__init__(meter_provider, lag_ttl_s)
        self._fixed_tracing = tracer_provider is not None
        self._tracing = tracer_provider is not None and _real_tracer_provider(tracer_provider)
        self._next_tracing_check = 0.0
        self._fields_of: TextMapPropagator | None = None
        self._fields_cache: frozenset[str] = frozenset()
        self._propagator = propagator
        self._record_keys = record_keys
        self._parent_from_headers = parent_from_headers

    @classmethod
    def default(cls) -> Telemetry:
        """The process-wide instance on the global providers (they may be installed later)."""
        global _default
        with _default_lock:
            if _default is None:
                _default = cls()
            return _default

    @classmethod
    def disabled(cls) -> Telemetry:
        """An instance that records nothing, even with an SDK installed (``telemetry=False``).

        Propagation headers of a processed record still pass through to its outputs.
        """
        from opentelemetry.metrics import NoOpMeterProvider
        from opentelemetry.trace import NoOpTracerProvider

        return cls(tracer_provider=NoOpTracerProvider(), meter_provider=NoOpMeterProvider())

    # ------------------------------------------------------------------ SDK or not
    def tracing_enabled(self) -> bool:
        """Whether a real tracer provider is installed (explicit, or the global one by now).

        The global provider is looked up again at most every ``RECHECK_S`` seconds (the
        lookup reads the environment, too slow for every record).
        """
        if self._tracing or self._fixed_tracing:
            return self._tracing
        now = time.monotonic()
        if now >= self._next_tracing_check:
            self._next_tracing_check = now + RECHECK_S
            self._tracing = _real_tracer_provider(trace.get_tracer_provider())
        return self._tracing

    # ------------------------------------------------------------------ propagation
    def _textmap(self) -> TextMapPropagator:
        return self._propagator or propagate.get_global_textmap()

    def _fields(self) -> frozenset[str]:
        """The propagator's header names, lower-cased (cached per propagator)."""
        textmap = self._textmap()
        if self._fields_of is not textmap:
            self._fields_cache = frozenset(f.lower() for f in textmap.fields)
            self._fields_of = textmap
        return self._fields_cache

    def inject(self, headers: HeadersLike = None, context: Context | None = None) -> HeaderList:
        """Return a copy of ``headers`` with the trace context (``traceparent``...) written in.

        Existing propagation headers are replaced, other headers kept in order. With no active
        span (or a no-op SDK and no parent) nothing is added.

        Args:
            headers: Record headers (list of pairs, dict or None).
            context: Context to inject (default: the current one, e.g. inside ``send_span``).
        """
        out = as_header_list(headers)
        if context is None and not self.tracing_enabled():
            carried = CARRIED.get()
            if carried is not None:  # inside process_span without an SDK: copy them as-is
                names = {n.lower() for n, _ in carried}
                return [(n, v) for n, v in out if n.lower() not in names] + carried
            if not trace.get_current_span().get_span_context().is_valid:
                return out  # nothing to propagate (baggage alone is not carried without SDK)
        self._textmap().inject(out, context=context, setter=_SETTER)
        return out

    def extract(self, headers: HeadersLike) -> Context:
        """Return the context carried by record ``headers`` (an empty one if none)."""
        return self._textmap().extract(as_header_list(headers), getter=_GETTER)

    # ------------------------------------------------------------------ producer
    def send_span(
        self,
        topic: str,
        partition: int | None = None,
        key: bytes | str | None = None,
        *,
        tombstone: bool = False,
    ) -> AbstractContextManager[Span]:
        """A PRODUCER span ``send <topic>``, current inside the block; inject inside it.

        Counts ``messaging.client.sent.messages`` when the block exits without an exception.

        Returns:
            A context manager giving the span (``INVALID_SPAN`` without an SDK).
        """
        if not self.tracing_enabled():
            if not self.metrics_enabled():
                return NOTHING
            return CountSent(self.sent, topic, partition)
        return self._send_span(topic, partition, key, tombstone)

    @contextmanager
    def _send_span(
        self, topic: str, partition: int | None, key: bytes | str | None, tombstone: bool
    ) -> Iterator[Span]:
        attrs: dict[str, AttributeValue] = {
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

    # ------------------------------------------------------------------ consumer
    def process_span(
        self,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | str | None = None,
        group: str | None = None,
        headers: HeadersLike = None,
        *,
        transaction: TransactionSpan | None = None,
    ) -> AbstractContextManager[Span]:
        """A CONSUMER span ``process <topic>`` around the handling of one record.

        Its parent is the producer's context from ``headers`` (see ``parent_from_headers``);
        it links to ``transaction``'s span when given. On exit it records the handler latency
        (``messaging.process.duration``, with ``error.type`` if the block raised) and counts
        ``messaging.client.consumed.messages``.

        Returns:
            A context manager giving the span (current inside the block, so produced outputs
            join the trace), or ``INVALID_SPAN`` without an SDK.
        """
        if not self.tracing_enabled():
            raw: HeaderList | None = None
            if headers and self._parent_from_headers:
                fields = self._fields()
                raw = [(n, v) for n, v in as_header_list(headers) if n.lower() in fields]
            measured = self.metrics_enabled()
            if not raw and not measured:
                return NOTHING
            latency = self._measured(topic, partition, group, 1) if measured else None
            return Carry(raw or None, latency)
        return self._process_span(topic, partition, offset, key, group, headers, transaction)

    @contextmanager
    def _process_span(
        self,
        topic: str,
        partition: int,
        offset: int,
        key: bytes | str | None,
        group: str | None,
        headers: HeadersLike,
        transaction: TransactionSpan | None,
    ) -> Iterator[Span]:
        attrs: dict[str, AttributeValue] = {
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
        records: Sequence[KafkaMessage],
        group: str | None = None,
        *,
        transaction: TransactionSpan | None = None,
    ) -> Iterator[Span]:
        """One CONSUMER span for a batch of ``confluent_kafka.Message`` objects.

        The span links to the producer context of each record (first 128), records
        ``messaging.batch.message_count``, and its latency is recorded once for the batch.

        Yields:
            The span (``INVALID_SPAN`` without an SDK).
        """
        topics = sorted({m.topic() for m in records})
        topic = topics[0] if len(topics) == 1 else None
        if not self.tracing_enabled():
            with self._measured(topic or "", None, group, len(records)):
                yield INVALID_SPAN
            return
        attrs: dict[str, AttributeValue] = {
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
        attrs: dict[str, AttributeValue],
        parent: Context | None,
        links: list[Link],
        topic: str,
        partition: int | None,
        group: str | None,
        count: int = 1,
    ) -> Iterator[None]:
        with (
            self._tracer.start_as_current_span(
                name, context=parent, kind=SpanKind.CONSUMER, attributes=attrs, links=links
            ) as span,
            self._measured(topic, partition, group, count, span),
        ):
            yield

    @contextmanager
    def _measured(
        self,
        topic: str,
        partition: int | None,
        group: str | None,
        count: int,
        span: Span | None = None,
    ) -> Iterator[None]:
        """Handler latency and consumed count around the block; error.type on the span."""
        start = time.perf_counter()
        error: str | None = None
        try:
            yield
        except BaseException as exc:
            error = type(exc).__name__
            if span is not None:
                span.set_attribute(c.ERROR_TYPE, error)
            raise
        finally:
            if self.metrics_enabled():
                self.handler_latency(
                    topic, partition, time.perf_counter() - start, group=group, error_type=error
                )
                self.instruments.consumed.add(count, attributes(topic, partition, group))

    def dead_lettered(
        self, topic: str, dlq_topic: str, count: int = 1, error_type: str | None = None
    ) -> None:
        """Count ``count`` input records of ``topic`` sent to ``dlq_topic``; add a span event.

        The event ``kafka_semantics.dead_lettered`` goes on the current span (the process
        span of the record) with the DLQ topic and ``error.type``.
        """
        super().dead_lettered(topic, dlq_topic, count, error_type)
        if self.tracing_enabled():
            span = trace.get_current_span()
            if span.is_recording():
                attrs: dict[str, AttributeValue] = {"kafka_semantics.dlq.topic": dlq_topic}
                if error_type is not None:
                    attrs[c.ERROR_TYPE] = error_type
                span.add_event("kafka_semantics.dead_lettered", attrs)

    # ------------------------------------------------------------------ transactions
    def start_transaction(self, transactional_id: str) -> TransactionSpan:
        """Begin a ``kafka.transaction`` span (not made current); end it with ``.end(outcome)``."""
        span: Span = INVALID_SPAN
        if self.tracing_enabled():
            span = self._tracer.start_span(
                "kafka.transaction",
                kind=SpanKind.INTERNAL,
                attributes={c.MESSAGING_SYSTEM: "kafka", c.TRANSACTIONAL_ID: transactional_id},
            )
        return TransactionSpan(span, self.instruments, transactional_id, self.metrics_enabled)

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
