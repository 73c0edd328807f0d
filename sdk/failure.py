"""The failure policy: run the user's handler with retries, then dead-letter or stop.

One runner and one dead-letter format for every front end (Consumer, Processor, QueueConsumer,
DatabaseSink, Spark): a dead-lettered record keeps its key, value and headers and gets the
``dlq.*`` headers below. The module imports only the layer it sits in (errors, profiles,
records), so that the consumer, one layer up, may use it (``sdk.core.failure`` is its
deprecated old place, removed in 0.3).
"""

from __future__ import annotations

import builtins
import importlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

from tenacity import Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from sdk._message import KafkaMessage
from sdk.errors import ConfigurationError, HandlerError
from sdk.profiles import FailurePolicy
from sdk.records import Output, OutputRecord

__all__ = ["DLQ_HEADERS", "HandlerRunner", "dead_letter"]

A = TypeVar("A")
"""What a handler takes: a record, or a batch of them."""

_log = logging.getLogger("sdk.dead_letter")


class _Announcer:
    """One WARNING per dead-lettered record, at most ``burst`` per ``window_s``.

    The rest are counted and summed up in the next line, so a poison flood cannot flood the log.
    """

    def __init__(self, burst: int = 10, window_s: float = 10.0) -> None:
        self._burst = burst
        self._window = window_s
        self._lock = threading.Lock()
        self._started = -window_s
        self._said = 0
        self._held = 0

    def __call__(
        self, message: KafkaMessage, topic: str, cause: BaseException, attempts: int
    ) -> None:
        now = time.monotonic()
        with self._lock:
            if now - self._started >= self._window:
                self._started, self._said = now, 0
            if self._said >= self._burst:
                self._held += 1
                return
            self._said += 1
            held, self._held = self._held, 0
        more = f" ({held} more dead-lettered before it, not logged)" if held else ""
        _log.warning(
            "dead-lettered %s[%s]@%s to %s after %d attempt(s): %s: %s%s",
            message.topic(),
            message.partition(),
            message.offset(),
            topic,
            attempts,
            type(cause).__name__,
            str(cause)[:300],
            more,
        )


_announce = _Announcer()


def _resolve_type(name: str) -> type[BaseException]:
    module, _, attr = name.rpartition(".")
    try:
        obj = getattr(importlib.import_module(module or "builtins"), attr)
    except (ImportError, AttributeError):
        obj = getattr(builtins, name, None)
    if not (isinstance(obj, type) and issubclass(obj, BaseException)):
        raise ConfigurationError(
            f"failure.retry_on: {name!r} is not an importable exception type",
            field="failure.retry_on",
        )
    return obj


class HandlerRunner:
    """Run a handler with retries; on the last failure raise HandlerError carrying the input."""

    def __init__(self, policy: FailurePolicy, on_retry: Callable[[], None] | None = None) -> None:
        self.policy = policy
        self._retry_on = tuple(_resolve_type(n) for n in policy.retry_on)
        self._on_retry = on_retry

    def retryable(self, exc: BaseException) -> bool:
        """Whether the policy retries after ``exc`` (``retry_on``; ``attempts`` > 1)."""
        return self.policy.attempts > 1 and isinstance(exc, self._retry_on)

    def run(self, fn: Callable[[A], Iterable[Output] | None], arg: A) -> list[Output]:
        """Call ``fn(arg)`` and materialize its outputs, retrying per the policy.

        Raises:
            HandlerError: Every attempt failed (or the error is not in retry_on).
        """
        # The first attempt runs without tenacity: building a Retrying per record costs more
        # than most handlers, and most records succeed at once.
        try:
            return list(fn(arg) or ())
        except Exception as exc:
            first = exc
        return self.retry(fn, arg, first)  # outside the except: no "during handling" chain

    def retry(
        self, fn: Callable[[A], Iterable[Output] | None], arg: A, first: Exception
    ) -> list[Output]:
        """Go on after a first attempt (made by the caller's hot loop) failed with ``first``.

        Raises:
            HandlerError: Every attempt failed (or the error is not in retry_on).
        """
        p = self.policy
        if p.attempts <= 1 or not isinstance(first, self._retry_on):
            first.__suppress_context__ = True
            raise HandlerError(
                f"handler failed after 1 attempt(s): {first!r}", record=arg, attempts=1
            ) from first
        attempts = 1

        def once() -> list[Output]:
            nonlocal attempts
            attempts += 1
            return list(fn(arg) or ())

        initial = p.backoff_initial_ms / 1000.0
        if self._on_retry:
            self._on_retry()
        time.sleep(initial)  # the wait after attempt 1; tenacity waits between the rest
        try:
            for attempt in Retrying(
                retry=retry_if_exception(lambda e: isinstance(e, self._retry_on)),
                stop=stop_after_attempt(p.attempts - 1),
                wait=wait_exponential(
                    multiplier=initial * 2, min=initial, max=p.backoff_max_ms / 1000.0
                ),
                before_sleep=lambda _: self._on_retry() if self._on_retry else None,
                reraise=True,
            ):
                with attempt:
                    return once()
        except Exception as exc:
            # the last attempt's error is the cause; the earlier attempts' errors (its context,
            # when a caller retries from inside its own except block) are not printed again
            exc.__suppress_context__ = True
            raise HandlerError(
                f"handler failed after {attempts} attempt(s): {exc!r}",
                record=arg,
                attempts=attempts,
            ) from exc
        raise AssertionError("unreachable")  # pragma: no cover


DLQ_HEADERS = (
    "dlq.topic",
    "dlq.partition",
    "dlq.offset",
    "dlq.error",
    "dlq.error.type",
    "dlq.error.message",
    "dlq.attempts",
    "dlq.stage",
)
"""The headers a dead-lettered record gets after its own (docs/consumer.md lists them)."""


def _qualified(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"


def dead_letter(
    message: KafkaMessage, topic: str, error: BaseException, *, attempts: int, stage: str
) -> OutputRecord:
    """Build the dead-letter copy of an input ``confluent_kafka.Message``.

    The original key, value and headers are kept; :data:`DLQ_HEADERS` are appended: where the
    record came from (``dlq.topic``, ``dlq.partition``, ``dlq.offset``), the error
    (``dlq.error`` as repr, ``dlq.error.type``, ``dlq.error.message``; the cause of a
    HandlerError or SerializationError is reported), ``dlq.attempts`` (handler runs, 0 for a
    record that could not be deserialized) and ``dlq.stage`` (``handler``, ``deserialize``, or
    ``user`` for :meth:`sdk.consumer.Consumer.dead_letter`).

    Args:
        message: The original ``confluent_kafka.Message``.
        topic: The dead-letter topic.
        error: Why it failed.
        attempts: How many times the handler ran.
        stage: ``"handler"``, ``"deserialize"`` or ``"user"``.

    Returns:
        The record to produce to ``topic``.
    """
    cause = error.__cause__ or error
    headers: list[tuple[str, bytes | str | None]] = list(message.headers() or [])
    headers += [
        ("dlq.topic", message.topic()),
        ("dlq.partition", str(message.partition())),
        ("dlq.offset", str(message.offset())),
        ("dlq.error", repr(cause)[:1000]),
        ("dlq.error.type", _qualified(cause)),
        ("dlq.error.message", str(cause)[:1000]),
        ("dlq.attempts", str(attempts)),
        ("dlq.stage", stage),
    ]
    _announce(message, topic, cause, attempts)
    return OutputRecord(topic=topic, value=message.value(), key=message.key(), headers=headers)
