"""A schema registry outage while decoding: retry the same record with backoff, then stop.

A registry that does not answer says nothing about the record, so the record must be neither
dead-lettered nor skipped: :class:`RegistryWait` decodes it again (backoff 0.2 s doubling to
5 s) until the registry answers or ``registry_timeout_s`` has passed, then raises
:class:`~sdk.errors.SchemaRegistryUnavailableError`. While it waits, the consume loop is
blocked on this record, so no offset of it or after it is stored or committed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar, cast

from sdk._message import KafkaMessage
from sdk.errors import SchemaRegistryUnavailableError

__all__ = ["DEFAULT_REGISTRY_TIMEOUT_S", "RegistryWait", "RegistryWaitStopped", "as_unavailable"]

_log = logging.getLogger("sdk.consumer")

T = TypeVar("T")

DEFAULT_REGISTRY_TIMEOUT_S = 60.0
"""For a deserializer that does not say (e.g. confluent-kafka's own ``AvroDeserializer``)."""

_FIRST_DELAY_S = 0.2
_MAX_DELAY_S = 5.0


class RegistryWaitStopped(SchemaRegistryUnavailableError):
    """The front end was stopped while it waited for the registry: not a failure of the run.

    The record was not decoded, so nothing of it or after it is stored or committed; the
    front end that set :attr:`RegistryWait.stopped` ends its run normally and the record is
    read again.
    """


def as_unavailable(exc: Exception, message: KafkaMessage) -> SchemaRegistryUnavailableError | None:
    """``exc`` as a registry outage if a registry call is to blame for it, else None.

    Catches what a deserializer did not translate itself (confluent-kafka's own registry
    deserializers passed in directly): their transport errors and 5xx must not make a poison
    record either.
    """
    if isinstance(exc, SchemaRegistryUnavailableError):
        return exc
    try:
        from sdk.schemas import unavailable_reason

        reason = unavailable_reason(exc)
    except ImportError:  # no schema-registry extra: no registry client could have failed
        return None
    if reason is None:
        return None
    error = SchemaRegistryUnavailableError(
        f"deserializing {_where(message)}: the schema registry did not answer ({reason})",
        record=message,
    )
    error.__cause__ = exc
    return error


def _where(message: KafkaMessage) -> str:
    return f"{message.topic()}[{message.partition()}]@{message.offset()}"


class RegistryWait:
    """Retries decoding one record while the registry is unavailable, for at most a timeout.

    Args:
        timeout_s: How long to retry one record before giving up.
        on_retry: Called before each new attempt (the consumer counts it in its stats).
        sleep: Waits (tests pass a fake).
        clock: Monotonic seconds.
    """

    def __init__(
        self,
        timeout_s: float,
        *,
        on_retry: Callable[[], None] | None = None,
        sleep: Callable[[float], Any] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.timeout_s = timeout_s
        self.on_retry = on_retry
        self.stopped: Callable[[], bool] | None = None
        """The front end's stop flag (set by the Consumer): a stop ends the wait at once."""
        self._sleep = sleep
        self._clock = clock

    def _pause(self, seconds: float) -> None:
        """Sleep ``seconds``, in steps of at most 0.2 s when a stop can end the wait."""
        if self.stopped is None:
            self._sleep(seconds)
            return
        while seconds > 0 and not self.stopped():
            step = min(seconds, _FIRST_DELAY_S)
            self._sleep(step)
            seconds -= step

    @classmethod
    def for_serdes(cls, *serdes: object) -> RegistryWait:
        """The wait for these (de)serializers: the longest ``registry_timeout_s`` they declare."""
        declared = [
            float(t)
            for d in serdes
            if isinstance(t := getattr(d, "registry_timeout_s", None), int | float)
        ]
        return cls(max(declared, default=DEFAULT_REGISTRY_TIMEOUT_S))

    def retry(
        self,
        decode: Callable[[], T],
        message: object,
        first: SchemaRegistryUnavailableError,
        *,
        where: str | None = None,
    ) -> T:
        """Call ``decode`` until it no longer fails for the registry, or the timeout passes.

        Args:
            decode: Decodes (or serializes) ``message`` once.
            message: The record in hand (a ``confluent_kafka.Message`` unless ``where`` says
                what it is).
            first: The failure that started the wait.
            where: What the logs and errors name (default: the message's topic, partition
                and offset).

        Returns:
            What ``decode`` returned once the registry answered.

        Raises:
            SchemaRegistryUnavailableError: Still unavailable after ``timeout_s``
                (``waited_s`` says how long, ``record`` is the message).
            Exception: Whatever else ``decode`` raised (a poison record, once the registry
                answered and, e.g., did not know the schema id).
        """
        started = self._clock()
        if where is None:
            where = _where(cast(KafkaMessage, message))
        _log.warning(
            "schema registry unavailable for %s: %s; retrying this record for up to "
            "%.0fs (nothing from it on is committed or dead-lettered meanwhile)",
            where,
            first,
            self.timeout_s,
        )
        last, delay = first, _FIRST_DELAY_S
        while True:
            waited = self._clock() - started
            if waited >= self.timeout_s:
                _log.error("schema registry still unavailable after %.1fs: stopping", waited)
                raise SchemaRegistryUnavailableError(
                    f"{last}; gave up on {where} after {waited:.1f}s (registry_timeout_s="
                    f"{self.timeout_s:g}): it and every later record were neither committed nor "
                    "dead-lettered, and are read again on restart",
                    record=message,
                    url=last.url,
                    waited_s=waited,
                ) from last
            self._pause(min(delay, self.timeout_s - waited))
            if self.stopped is not None and self.stopped():
                waited = self._clock() - started
                _log.warning(
                    "stopped while waiting for the schema registry: %s is read again", where
                )
                raise RegistryWaitStopped(
                    f"{last}; stopped after waiting {waited:.1f}s for the registry: {where} and "
                    "every later record were neither committed nor dead-lettered",
                    record=message,
                    url=last.url,
                    waited_s=waited,
                ) from last
            delay = min(delay * 2, _MAX_DELAY_S)
            if self.on_retry is not None:
                self.on_retry()
            try:
                result = decode()
            except SchemaRegistryUnavailableError as exc:
                last = exc
                continue
            _log.warning(
                "schema registry answers again after %.1fs; %s done",
                self._clock() - started,
                where,
            )
            return result
