"""The error seam: the one place where confluent-kafka's exceptions become the SDK's.

Every call into a confluent-kafka client that can raise ``KafkaException`` goes through
:func:`translating` (one call, translated) or :func:`call_kafka` (retried while the error is
transient, then translated). No other module catches ``KafkaException``: like httpx's
``map_httpcore_exceptions``, a layer above this one only ever sees :class:`~sdk.errors.SdkError`.

The classification of an error (its :mod:`sdk.errors` subclass, and the ``retriable``,
``fatal`` and ``txn_requires_abort`` flags) is decided here, at translation, from what the
caller says the call was (``transactional``, ``commit``, ``abortable``); it is never patched
afterwards.

One confluent-kafka quirk is handled here too: when a fatal error (e.g. a fenced transactional
producer) reaches a client that has an ``error_cb``, ``poll()`` and ``flush()`` raise the bare
``KafkaError`` object itself, which is not a ``BaseException`` — no ``except`` clause but a
bare one can catch it, and a thread that meets it dies without a printable traceback. Both
entry points below catch it and translate it like a ``KafkaException``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException

from sdk.errors import RETRY_FOR_S, KafkaClientError, from_kafka_error, is_transient

__all__ = ["RETRY_FOR_S", "call_kafka", "kafka_error", "timeout_error", "translating"]

T = TypeVar("T")


def kafka_error(exc: BaseException) -> Any:
    """The ``KafkaError`` a ``KafkaException`` carries (None if it carries none)."""
    return exc.args[0] if exc.args else None


def _bare_kafka_error() -> Any:
    """The bare ``KafkaError`` being raised (see the module docstring), or None."""
    value = sys.exc_info()[1]
    return value if isinstance(value, KafkaError) else None


def timeout_error(reason: str) -> Any:
    """A ``KafkaError(_TIMED_OUT)`` for a timeout the SDK itself noticed (e.g. records left)."""
    return KafkaError(KafkaError._TIMED_OUT, reason)


@contextmanager
def translating(
    context: str,
    *,
    transactional: bool = False,
    commit: bool = False,
    abortable: bool = False,
    record: Any = None,
) -> Iterator[None]:
    """Translate a ``KafkaException`` raised in the block into the SDK's tree.

    Args:
        context: What the SDK was doing; starts the error message.
        transactional: The call was a transactional producer call.
        commit: The call committed or stored offsets (an unclassified error is a CommitError).
        abortable: The call produced inside a transaction: an error that is neither fenced nor
            fatal leaves the transaction abortable (librdkafka refuses further produce() with
            ``_STATE`` once a delivery failed, without the txn_requires_abort flag).
        record: The record concerned, kept on the error.

    Raises:
        KafkaClientError: The translated error, chained to the original.
    """

    def translated(err: Any) -> KafkaClientError:
        return from_kafka_error(
            err,
            context=context,
            record=record,
            transactional=transactional or abortable,
            commit=commit,
            abortable=abortable,
        )

    try:
        yield
    except KafkaException as exc:
        raise translated(kafka_error(exc)) from exc
    except BaseException:
        raise
    except:  # noqa: E722 - only a bare except catches the bare KafkaError (module docstring)
        err = _bare_kafka_error()
        if err is None:
            raise
        raise translated(err) from None


def call_kafka(
    fn: Callable[[], T],
    *,
    context: str,
    transactional: bool = False,
    commit: bool = False,
    attempts: int = 5,
    on_retry: Callable[[str], None] | None = None,
) -> T:
    """Run one client call; retry it while the error is transient (backoff 0.05 s doubling to 2 s).

    Args:
        fn: The call, e.g. ``lambda: client.commit(asynchronous=False)``.
        context: Name of the call, starts the error message.
        transactional: See :func:`translating`.
        commit: See :func:`translating`.
        attempts: Attempts before the last error is raised (with more than one, retries go on
            for at least :data:`sdk.errors.RETRY_FOR_S` seconds too: a coordinator loading
            ``__consumer_offsets`` after a bounce answers for longer than five quick tries).
        on_retry: Called with ``context`` before each retry (counters, metrics).

    Returns:
        What ``fn`` returned.

    Raises:
        KafkaClientError: The translated error once retries are spent or the error is not
            transient.
    """
    started = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except KafkaException as exc:
            err = kafka_error(exc)
            spent = attempt >= attempts and (
                attempts <= 1 or time.monotonic() - started >= RETRY_FOR_S
            )
            if spent or err is None or not is_transient(err):
                raise from_kafka_error(
                    err, context=context, transactional=transactional, commit=commit
                ) from exc
        except BaseException:
            raise
        except:  # noqa: E722 - the bare KafkaError of a fatal error (module docstring)
            err = _bare_kafka_error()
            if err is None:
                raise
            raise from_kafka_error(
                err, context=context, transactional=transactional, commit=commit
            ) from None
        if on_retry is not None:
            on_retry(context)
        time.sleep(min(2.0, 0.05 * 2 ** (attempt - 1)))  # 0.05, 0.1, ... 2 s
