"""``send()``'s general path: a record its fast path does not take, with its delivery handle.

``Producer.send()`` hands a record straight to librdkafka when there is nothing to do. Every
other record comes here: it becomes a :class:`ProducerRecord` with a handle and takes the
record path (:class:`~sdk.producer._enqueue.RecordPath`); with an OpenTelemetry SDK recording,
the observed send wraps that in a ``send <topic>`` span with trace headers.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sdk._client import ProducerClient
from sdk.errors import ConfigurationError, SdkError
from sdk.lifecycle import Lifecycle
from sdk.observability import Telemetry
from sdk.producer._client_slot import ClientSlot
from sdk.producer._delivery import TimedHandle
from sdk.producer._enqueue import RecordPath
from sdk.producer._records import DeliveryHandle, HeaderPairs, ProducerRecord

if TYPE_CHECKING:
    from sdk.producer._producer import Producer
    from sdk.producer._transactions import TransactionalOutput

__all__ = ["Sender"]

_new_record = tuple.__new__


class Sender:
    """Send one record with a handle, every step applied that ``send()``'s fast path skips.

    Args:
        owner: The Producer the handles report to; its ``_handle_type`` is their type.
        slot: The producer's client slot.
        path: The producer's record path (serialize, look up, place, produce).
        telemetry: The observed send's spans, trace headers and metrics (None: none).
        output: The producer's transactional side (an observed send counts on its span).
    """

    def __init__(
        self,
        owner: Producer,
        slot: ClientSlot,
        path: RecordPath,
        telemetry: Telemetry | None,
        output: TransactionalOutput,
    ) -> None:
        self._owner = owner
        self._handle_type = owner._handle_type
        self._slot = slot
        # the bound method itself, not a delegating method: no extra call per record
        self._produce = path.produce
        self._telemetry = telemetry
        self._output = output

    def send(
        self,
        topic: str | ProducerRecord,
        value: Any,
        key: Any,
        headers: HeaderPairs | Mapping[str, bytes | str | None] | None,
        partition: int | None,
        timestamp_ms: int | None,
        handle: DeliveryHandle | None,
    ) -> DeliveryHandle:
        """``send()`` for every record its fast path does not take (or could not queue).

        Raises:
            ConfigurationError: ``topic`` is neither a str nor a ProducerRecord.
            SdkError: As ``Producer.send``.
        """
        if type(topic) is str:
            if headers is not None and isinstance(headers, Mapping):
                headers = list(headers.items())
            # tuple.__new__ skips the named tuple's Python-level __new__ and its frame
            record = _new_record(
                ProducerRecord, (topic, value, key, headers, partition, timestamp_ms)
            )
        elif isinstance(topic, ProducerRecord):
            record = topic
        else:
            raise ConfigurationError(
                f"send: topic must be a str or a ProducerRecord, got {type(topic).__name__}",
                field="topic",
            )
        slot = self._slot
        client = slot.client
        if client is None or slot.state is not Lifecycle.OPEN:
            client = slot.ensure()
        if slot.observed:
            return self.send_observed(client, record)
        if handle is None:  # a record send()'s fast path did not take (or asyncio's handle)
            handle = self._handle_type(record, self._owner)
        else:  # send()'s fast path made it, and librdkafka refused it there
            handle._record = record
        # RecordPath.produce's common case is the same straight call to librdkafka
        self._produce(client, record, handle)
        return handle

    def send_observed(self, client: ProducerClient, record: ProducerRecord) -> DeliveryHandle:
        """``send`` with a ``send <topic>`` span, trace headers and delivery metrics.

        Raises:
            SdkError: As ``Producer.send`` (``.record`` is the caller's record, untraced).
        """
        tel = self._telemetry
        assert tel is not None
        handle = TimedHandle(record, self._owner)
        with tel.send_span(record.topic, record.partition, record.key):
            traced = record._replace(headers=tel.inject(record.headers))
            handle._t0 = time.perf_counter()
            try:
                self._produce(client, traced, handle)
            except SdkError as exc:
                exc.record = record  # type: ignore[attr-defined]  # the caller's own record
                raise
        span = self._output.span
        if span is not None:
            span.add()
        return handle
