"""In-memory OpenTelemetry SDK providers for the observability tests (no global state)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from sdk.observability import Telemetry


@dataclass
class Otel:
    telemetry: Telemetry
    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader
    tracer_provider: TracerProvider

    def spans(self, name: str | None = None) -> list[ReadableSpan]:
        got = list(self.exporter.get_finished_spans())
        return [s for s in got if name is None or s.name == name]

    def points(self, metric: str) -> list[tuple[dict[str, Any], Any]]:
        """(attributes, point) of every data point of ``metric`` in one collection."""
        data = self.reader.get_metrics_data()
        out: list[tuple[dict[str, Any], Any]] = []
        if data is None:
            return out
        for rm in data.resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    if m.name == metric:
                        out += [(dict(p.attributes or {}), p) for p in m.data.data_points]
        return out

    def total(self, metric: str, match: dict[str, Any] | None = None) -> float:
        """Sum of counter values (or histogram counts) of the points matching ``match``."""
        total = 0.0
        for attrs, p in self.points(metric):
            if all(attrs.get(k) == v for k, v in (match or {}).items()):
                total += p.value if hasattr(p, "value") else p.count
        return total


def make_otel(**kwargs: Any) -> Otel:
    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    mp = MeterProvider(metric_readers=[reader])
    tel = Telemetry(tracer_provider=tp, meter_provider=mp, **kwargs)
    return Otel(tel, exporter, reader, tp)
