"""The consumer's Kafka calls: retried while librdkafka says retriable, translated once."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from confluent_kafka import KafkaException

from sdk.errors import (
    RETRY_FOR_S,
    CommitError,
    KafkaClientError,
    from_kafka_error,
    is_transient,
)

__all__ = ["call_kafka", "translate"]

T = TypeVar("T")


def translate(kafka_error: Any, context: str, *, commit: bool = False) -> KafkaClientError:
    """Translate a ``KafkaError`` via :func:`sdk.errors.from_kafka_error`.

    Args:
        kafka_error: The ``confluent_kafka.KafkaError``.
        context: What the consumer was doing (starts the message).
        commit: The call was an offset commit or store: an error that has no more specific
            class becomes a :class:`~sdk.errors.CommitError`.

    Returns:
        The translated error.
    """
    error = from_kafka_error(kafka_error, context=context)
    if commit and type(error) is KafkaClientError:
        return CommitError(str(error), kafka_error=kafka_error)
    return error


def call_kafka(fn: Callable[[], T], *, context: str, commit: bool = False, attempts: int = 5) -> T:
    """Run one consumer call; retry it (exponential backoff) while the error is retriable.

    Args:
        fn: The call, e.g. ``lambda: client.commit(asynchronous=False)``.
        context: Name of the call, starts the error message.
        commit: See :func:`translate`.
        attempts: Attempts before the last error is raised (with more than one, retries go on
            for at least :data:`sdk.errors.RETRY_FOR_S` seconds too).

    Returns:
        What ``fn`` returned.

    Raises:
        KafkaClientError: The translated error (CommitError for a refused commit).
    """
    started = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except KafkaException as exc:
            err = exc.args[0] if exc.args else None
            retriable = err is not None and is_transient(err)
            spent = attempt >= attempts and (
                attempts <= 1 or time.monotonic() - started >= RETRY_FOR_S
            )
            if not retriable or spent:
                raise translate(err, context, commit=commit) from exc
            time.sleep(min(2.0, 0.05 * 2**attempt))
