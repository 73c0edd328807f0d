"""The fast path without an OpenTelemetry SDK: plain context managers, no spans.

Generator-based context managers and the API's no-op spans cost several microseconds per
record; these classes cost a fraction of that (see ``benchmarks/observability.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from contextvars import ContextVar, Token
from types import TracebackType

from opentelemetry.trace import INVALID_SPAN, Span

from sdk.observability._headers import HeaderList

__all__ = ["CARRIED", "NOTHING", "Carry", "CountSent"]

CARRIED: ContextVar[HeaderList | None] = ContextVar("sdk_observability_carried", default=None)
"""The propagation headers of the record being processed, copied as-is to its outputs."""

NOTHING: AbstractContextManager[Span] = nullcontext(INVALID_SPAN)
"""Neither tracing nor metrics nor anything to carry: a shared, reusable no-op."""


class Carry(AbstractContextManager[Span]):
    """Makes ``headers`` the propagation headers to copy inside the block; times the block."""

    def __init__(self, headers: HeaderList | None, latency: AbstractContextManager[None] | None):
        self._headers = headers
        self._latency = latency
        self._token: Token[HeaderList | None] | None = None

    def __enter__(self) -> Span:
        if self._headers is not None:
            self._token = CARRIED.set(self._headers)
        if self._latency is not None:
            self._latency.__enter__()
        return INVALID_SPAN

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            if self._latency is not None:
                self._latency.__exit__(exc_type, exc, tb)
        finally:
            if self._token is not None:
                CARRIED.reset(self._token)


class CountSent(AbstractContextManager[Span]):
    """Counts the record as sent when the block exits without an exception."""

    def __init__(self, sent: Callable[..., None], topic: str, partition: int | None) -> None:
        self._sent = sent
        self._topic = topic
        self._partition = partition

    def __enter__(self) -> Span:
        return INVALID_SPAN

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self._sent(self._topic, partition=self._partition)
