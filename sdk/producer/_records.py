"""Value objects of the producing side: the record to send, where it landed, its handle."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from confluent_kafka import KafkaError

from sdk._client import KafkaMessage
from sdk._deprecation import renamed
from sdk.errors import KafkaClientError, KafkaTimeoutError
from sdk.producer._handle import HandleCore, HotPath

__all__ = ["DeliveryHandle", "ListedHandle", "ProducerRecord", "RecordMetadata"]

HeaderPairs = Sequence[tuple[str, bytes | str | None]]
"""A record's headers as (name, value) pairs, in order (a name may repeat)."""


class ProducerRecord(NamedTuple):
    """A record to produce, before serialization (kept on every error so nothing is lost).

    An immutable named tuple: cheap to create on the per-record path.
    """

    topic: str
    value: Any = None
    key: Any = None
    headers: HeaderPairs | None = None
    partition: int | None = None
    timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where an acknowledged record landed."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int | None = None


class DeliveryHandle(HandleCore):
    """The outcome of one ``send()``: resolves when the broker acknowledges or rejects it.

    ``result()`` serves the producer's delivery callbacks while it waits, so it also works in a
    single-threaded program. A handle is cheap (no lock, no metadata object until asked): the
    handle itself is the producer's delivery callback. Its slots and that callback are
    :mod:`sdk.producer._handle`'s core.

    Attributes:
        record: The record as the caller gave it (before serialization).
    """

    # ``send()``'s fast path keeps topic, value and key on the handle and builds the
    # ProducerRecord only if ``record`` is read: one object per in-flight record instead of
    # two halves the allocations the garbage collector counts
    __slots__ = ()

    def __init__(self, record: ProducerRecord, owner: _Owner) -> None:
        self._record = record
        self._owner = owner  # until the handle resolves (then None)
        # None: pending; a Message (ListedHandle: a tuple): delivered; KafkaClientError: failed
        self._state = None

    @property
    def record(self) -> ProducerRecord:
        """The record as the caller gave it (before serialization)."""
        record: ProducerRecord | None = self._record
        if record is None:
            record = self._record = ProducerRecord(self._topic, self._value, self._key)
        return record

    def __repr__(self) -> str:
        state = self._state
        text = "pending" if state is None else ("failed" if self.exception() else "delivered")
        return f"DeliveryHandle({text}, topic={self.record.topic!r})"

    def done(self) -> bool:
        """True once the broker acknowledged or the record failed."""
        return self._state is not None

    def result(
        self, timeout_s: float | None = None, *, timeout: float | None = None
    ) -> RecordMetadata:
        """Wait for the outcome.

        Args:
            timeout_s: Seconds to wait; None waits until the producer's delivery timeout decides.
            timeout: Deprecated name of ``timeout_s``, removed in 0.3.

        Returns:
            Where the record landed.

        Raises:
            KafkaClientError: The record failed (the subclass says why; ``.record`` holds it).
            KafkaTimeoutError: No outcome within ``timeout_s`` (the record may still be
                delivered).
            ConfigurationError: Both ``timeout_s`` and ``timeout`` were given.
        """
        if timeout is not None:
            timeout_s = renamed("DeliveryHandle.result", "timeout", timeout, "timeout_s", timeout_s)
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while self._state is None:
            left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if left <= 0:
                raise KafkaTimeoutError(
                    f"no delivery outcome for a record to {self.record.topic!r} within "
                    f"{timeout_s}s; it is still queued and may yet be delivered",
                    record=self.record,
                )
            owner = self._owner
            if owner is not None:  # None: resolved meanwhile (its outcome is on _state)
                owner._poll(left)
        state = self._state
        if isinstance(state, KafkaClientError):
            raise state
        if type(state) is tuple:  # a ListedHandle's (partition, offset, timestamp)
            return RecordMetadata(self.record.topic, *state)
        return RecordMetadata(
            state.topic(), state.partition(), state.offset(), state.timestamp()[1]
        )

    def exception(self) -> KafkaClientError | None:
        """The failure, if the record failed (None while pending or on success)."""
        state = self._state
        return state if isinstance(state, KafkaClientError) else None


class ListedHandle(DeliveryHandle):
    """A handle of ``send_many``: kept in the returned list, so it keeps little.

    On delivery it keeps where the record landed as a plain tuple instead of librdkafka's
    message (a garbage-collected object holding a copy of key and value). A list of handles
    that outlives its records' delivery then holds one collected object per record, not two:
    fewer objects for the garbage collector to pass over.
    """

    __slots__ = ()

    def _deliver(self, err: KafkaError | None, msg: KafkaMessage) -> None:
        DeliveryHandle._deliver(self, err, msg)  # counts, on_delivery, or the failure
        if err is None:  # then keep where it landed, not the message
            self._state = (msg.partition(), msg.offset(), msg.timestamp()[1])

    __call__ = _deliver


class _Owner(Protocol):
    """What a handle needs from its producer."""

    _hot: HotPath  # the delivered count and the user's callback

    def _poll(self, timeout_s: float) -> int: ...

    def _delivered(self, handle: DeliveryHandle) -> None: ...

    def _failed(self, handle: DeliveryHandle, err: KafkaError) -> KafkaClientError: ...
