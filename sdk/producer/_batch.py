"""The one loop of the Producer's many-record sends: ``send_many`` and ``send_batch``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from sdk._client import positional_produce
from sdk.errors import SdkError
from sdk.producer._handle import new_handle
from sdk.producer._records import DeliveryHandle, ListedHandle, ProducerRecord

if TYPE_CHECKING:
    from sdk.producer._producer import Producer

__all__ = ["enqueue_each"]


def enqueue_each(
    producer: Producer, records: Iterable[ProducerRecord], handles: list[DeliveryHandle] | None
) -> int:
    """Queue records in order; the one loop of ``send_many`` and ``send_batch``.

    With ``handles`` (send_many) each record gets a handle, appended to it; with None
    (send_batch) every record shares the ledger's ``on_batch_delivery``. Returns the count
    queued.

    Raises:
        SdkError: As ``Producer.send``; ``.handles`` (send_many) or ``.queued`` (send_batch) on
            the error tells what was queued before it.
    """
    slot = producer._slot
    client = slot.ensure()
    # serve: translated (a fatal error raises); produce: every argument positional
    poll, produce = slot.serve, positional_produce(client)
    callback: Any = producer._ledger.on_batch_delivery
    append = None if handles is None else handles.append
    known, fast = producer._known_topics, producer._fast
    handle_type = producer._handle_type
    plain = handle_type is DeliveryHandle
    queued = 0
    try:
        for record in records:
            if slot.observed:  # re-checked every 1,000 records below
                handle = producer._send_observed(client, record)
                if append is not None:
                    append(handle)
            else:
                if append is not None:
                    if plain:  # no __init__ call (as send()'s fast path)
                        handle = new_handle(ListedHandle, producer, None, None, None)
                        handle._record = record  # the caller's own: nothing to build
                    else:
                        handle = handle_type(record, producer)
                    append(handle)
                    callback = handle
                topic, value, key, headers, partition, timestamp_ms = record
                # send()'s fast-path test, inlined (a helper would add a call per record)
                if (
                    fast
                    and headers is None
                    and timestamp_ms is None
                    and (value is None or type(value) is bytes)
                    and (key is None or type(key) is bytes)
                    and topic in known
                ):
                    try:
                        p = -1 if partition is None else partition  # -1: the partitioner
                        produce(topic, value, key, p, callback)
                    except Exception:  # full queue, refusal: the general path handles it
                        producer._produce(client, record, callback)
                else:
                    producer._produce(client, record, callback)
            queued += 1
            if not queued % 1000:
                poll(0)
                slot.gate()
    except SdkError as exc:
        if handles is None:
            exc.queued = queued  # type: ignore[attr-defined]
        else:
            del handles[queued:]  # appended before its produce: the refused record's handle
            exc.handles = handles  # type: ignore[attr-defined]
        raise
    poll(0)
    return queued
