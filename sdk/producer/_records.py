"""Value objects of the producing side: the record to send, where it landed, its handle."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from sdk.errors import KafkaClientError, KafkaTimeoutError

__all__ = ["DeliveryHandle", "ProducerRecord", "RecordMetadata"]

Headers = Sequence[tuple[str, bytes | str | None]]


class ProducerRecord(NamedTuple):
    """A record to produce, before serialization (kept on every error so nothing is lost).

    An immutable named tuple: cheap to create on the per-record path.
    """

    topic: str
    value: Any = None
    key: Any = None
    headers: Headers | None = None
    partition: int | None = None
    timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class RecordMetadata:
    """Where an acknowledged record landed."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int | None = None


class DeliveryHandle:
    """The outcome of one ``send()``: resolves when the broker acknowledges or rejects it.

    ``result()`` serves the producer's delivery callbacks while it waits, so it also works in a
    single-threaded program. A handle is cheap (no lock, no metadata object until asked): the
    handle itself is the producer's delivery callback.

    Attributes:
        record: The record as the caller gave it (before serialization).
    """

    __slots__ = ("_owner", "_state", "record")

    def __init__(self, record: ProducerRecord, owner: _Owner) -> None:
        self.record = record
        self._owner = owner
        self._state: Any = None  # None: pending; a Message: delivered; KafkaClientError: failed

    def __repr__(self) -> str:
        state = self._state
        text = "pending" if state is None else ("failed" if self.exception() else "delivered")
        return f"DeliveryHandle({text}, topic={self.record.topic!r})"

    def _deliver(self, err: Any, msg: Any) -> None:
        """The librdkafka delivery callback of this record."""
        if err is None:
            self._state = msg
            owner = self._owner
            if owner._notify:
                owner._delivered(self)
            else:
                owner.delivered += 1
        else:
            self._owner._failed(self, err)  # sets _state to the translated error

    # the handle is its own delivery callback: no bound-method object per in-flight record
    __call__ = _deliver

    def done(self) -> bool:
        """True once the broker acknowledged or the record failed."""
        return self._state is not None

    def result(self, timeout: float | None = None) -> RecordMetadata:
        """Wait for the outcome.

        Args:
            timeout: Seconds to wait; None waits until the producer's delivery timeout decides.

        Returns:
            Where the record landed.

        Raises:
            KafkaClientError: The record failed (the subclass says why; ``.record`` holds it).
            KafkaTimeoutError: No outcome within ``timeout`` (the record may still be delivered).
        """
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._state is None:
            left = 0.1 if deadline is None else min(0.1, deadline - time.monotonic())
            if left <= 0:
                raise KafkaTimeoutError(
                    f"no delivery outcome for a record to {self.record.topic!r} within "
                    f"{timeout}s; it is still queued and may yet be delivered",
                    record=self.record,
                )
            self._owner._poll(left)
        state = self._state
        if isinstance(state, KafkaClientError):
            raise state
        return RecordMetadata(
            state.topic(), state.partition(), state.offset(), state.timestamp()[1]
        )

    def exception(self) -> KafkaClientError | None:
        """The failure, if the record failed (None while pending or on success)."""
        state = self._state
        return state if isinstance(state, KafkaClientError) else None


class _Owner(Protocol):
    """What a handle needs from its producer."""

    delivered: int
    _notify: bool

    def _poll(self, timeout: float) -> Any: ...

    def _delivered(self, handle: DeliveryHandle) -> None: ...

    def _failed(self, handle: DeliveryHandle, err: Any) -> KafkaClientError: ...
