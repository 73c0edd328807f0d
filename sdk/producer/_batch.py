"""The many-record sends of the Producer: ``send_many`` (a handle each) and ``send_batch``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from sdk._client import positional_produce
from sdk.errors import SdkError
from sdk.producer._handle import new_handle
from sdk.producer._records import DeliveryHandle, ListedHandle, ProducerRecord

__all__ = ["BatchSending"]


class BatchSending:
    """Mixin of :class:`~sdk.producer.Producer`: ``send_many`` and ``send_batch``.

    One loop serves both; what it needs from the class is declared below.
    """

    _known_topics: set[str]
    _fast: bool
    _observed: bool
    _handle_type: type[DeliveryHandle]
    _produce: Callable[[Any, ProducerRecord, Any], None]
    _on_batch_delivery: Callable[[Any, Any], None]
    _ensure_client: Callable[[], Any]
    _poll: Callable[[float], Any]
    _check_telemetry: Callable[[], None]
    _send_observed: Callable[[Any, ProducerRecord], DeliveryHandle]

    def send_many(self, records: Iterable[ProducerRecord]) -> list[DeliveryHandle]:
        """Queue many records with the least per-record overhead (the throughput path).

        Delivery callbacks are served every 1,000 records, so the queue drains while this runs.

        Args:
            records: The records, in order.

        Returns:
            One handle per record, in order.

        Raises:
            SdkError: As :meth:`send`, for the first record that cannot be queued; the records
                before it are queued (their handles are on ``.handles`` of the error).
        """
        handles: list[DeliveryHandle] = []
        self._enqueue_each(records, handles)
        return handles

    def send_batch(self, records: Iterable[ProducerRecord]) -> int:
        """Queue many records without per-record handles: the fastest path.

        One shared delivery callback counts acknowledgements; a failed record is rebuilt from
        the delivery report (topic, serialized key and value, headers, partition) and reported
        by the next :meth:`flush` in ``DeliveryError.failures`` — so nothing is lost silently,
        but a failed record comes back in its serialized (bytes) form. With an OpenTelemetry
        SDK recording, records take the traced path of :meth:`send`.

        Args:
            records: The records, in order.

        Returns:
            The number of records queued.

        Raises:
            SdkError: As :meth:`send`, for the first record that cannot be queued; the records
                before it are queued (``.queued`` on the error says how many).
        """
        return self._enqueue_each(records, None)

    def _enqueue_each(
        self, records: Iterable[ProducerRecord], handles: list[DeliveryHandle] | None
    ) -> int:
        """Queue records in order; the one loop of ``send_many`` and ``send_batch``.

        With ``handles`` (send_many) each record gets a handle, appended to it; with None
        (send_batch) every record shares :meth:`_on_batch_delivery`. Returns the count queued.

        Raises:
            SdkError: As :meth:`send`; ``.handles`` (send_many) or ``.queued`` (send_batch) on
                the error tells what was queued before it.
        """
        client = self._ensure_client()
        # _poll: translated (a fatal error raises); produce: every argument positional
        poll, produce = self._poll, positional_produce(client)
        callback = self._on_batch_delivery
        append = None if handles is None else handles.append
        known, fast = self._known_topics, self._fast
        plain = self._handle_type is DeliveryHandle
        owner: Any = self  # the Producer: what a handle reports to
        queued = 0
        try:
            for record in records:
                if self._observed:  # re-checked every 1,000 records below
                    handle = self._send_observed(client, record)
                    if append is not None:
                        append(handle)
                else:
                    if append is not None:
                        if plain:  # no __init__ call (as send()'s fast path)
                            handle = new_handle(ListedHandle, owner, None, None, None)
                            handle._record = record  # the caller's own: nothing to build
                        else:
                            handle = self._handle_type(record, owner)
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
                            self._produce(client, record, callback)
                    else:
                        self._produce(client, record, callback)
                queued += 1
                if not queued % 1000:
                    poll(0)
                    self._check_telemetry()
        except SdkError as exc:
            if handles is None:
                exc.queued = queued  # type: ignore[attr-defined]
            else:
                del handles[queued:]  # appended before its produce: the refused record's handle
                exc.handles = handles  # type: ignore[attr-defined]
            raise
        poll(0)
        return queued
