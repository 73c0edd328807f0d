"""Render finished in-memory spans as an indented text tree (the picture in the docs)."""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan

SHOWN = {
    "messaging.destination.partition.id": "partition",
    "messaging.kafka.offset": "offset",
    "messaging.kafka.message.key": "key",
    "messaging.consumer.group.name": "group",
    "messaging.batch.message_count": "records",
    "kafka_semantics.transaction.outcome": "outcome",
    "error.type": "error",
}


def render_tree(spans: Sequence[ReadableSpan], trace_id: int) -> str:
    """One trace as a tree: span name, kind, duration and the main attributes; links noted.

    Spans linked from the trace (e.g. its transaction) are listed after it.
    """
    mine = [s for s in spans if s.context is not None and s.context.trace_id == trace_id]
    ids = {s.context.span_id for s in mine if s.context is not None}
    children: dict[int | None, list[ReadableSpan]] = {}
    for s in mine:
        parent = s.parent.span_id if s.parent is not None else None
        children.setdefault(parent if parent in ids else None, []).append(s)
    names = {s.context.span_id: s.name for s in spans if s.context is not None}
    lines = [f"trace {trace_id:032x}"]

    def walk(span: ReadableSpan, depth: int) -> None:
        attrs = dict(span.attributes or {})
        shown = " ".join(f"{label}={attrs[k]}" for k, label in SHOWN.items() if k in attrs)
        ms = ((span.end_time or 0) - (span.start_time or 0)) / 1e6
        kind = span.kind.name if span.kind is not None else ""
        lines.append(f"{'  ' * depth}└─ {span.name} [{kind}, {ms:.2f} ms] {shown}".rstrip())
        for event in span.events:
            attrs_e = dict(event.attributes or {})
            detail = " ".join(
                f"{k.split('.')[-1]}={v}" for k, v in attrs_e.items() if "stacktrace" not in k
            )
            lines.append(f"{'  ' * (depth + 2)}• event: {event.name} {detail}".rstrip())
        for link in span.links:
            target = names.get(link.context.span_id, "remote span")
            lines.append(f"{'  ' * (depth + 2)}↳ link: {target}")
        assert span.context is not None
        for child in sorted(
            children.get(span.context.span_id, []), key=lambda s: s.start_time or 0
        ):
            walk(child, depth + 1)

    for root in sorted(children.get(None, []), key=lambda s: s.start_time or 0):
        walk(root, 0)
    linked = {lk.context.span_id for s in mine for lk in s.links} - ids
    for span in spans:
        if span.context is not None and span.context.span_id in linked:
            lines.append(f"linked, own trace {span.context.trace_id:032x}")
            walk(span, 0)
    return "\n".join(lines)
