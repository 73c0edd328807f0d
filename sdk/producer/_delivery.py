"""The delivery side of the Producer: what its handles and delivery callbacks report to.

librdkafka calls a delivery callback once per record, from whichever thread serves callbacks
(``poll``/``flush``/``DeliveryHandle.result``). Those callbacks land here: the acknowledged and
failed counters, the failures collected until the next ``flush()`` (each translated once, with
its record), the unknown-partition hint to the partitioner, the delivery metrics and the user's
``on_delivery``. The observed send (an OpenTelemetry SDK recording) is here too: its span and
trace headers, and the timed handle whose delivery feeds the latency metric.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError

from sdk._client import translating
from sdk.core.session import TransactionSession
from sdk.errors import DeliveryError, KafkaClientError, SdkError, from_kafka_error
from sdk.observability import Telemetry
from sdk.partitioners import PartitionRouter
from sdk.producer._handle import HotPath
from sdk.producer._records import DeliveryHandle, ProducerRecord

__all__ = ["UNKNOWN_PARTITION_CODES", "DeliveryLedger", "TimedHandle"]

UNKNOWN_PARTITION_CODES = frozenset(
    (KafkaError._UNKNOWN_PARTITION, KafkaError.UNKNOWN_TOPIC_OR_PART)
)
"""Error codes after which the partitioner's cached partition count is stale."""


class DeliveryLedger:
    """Mixin of :class:`~sdk.producer.Producer`: the owner its delivery handles report to.

    It implements what ``sdk.producer._records._Owner`` asks of a handle's owner. The delivered
    count and the user's callback live on ``_hot`` (:data:`~sdk.producer._handle.HotPath`),
    which the delivery callbacks and ``send()`` read once per record: C fields where the
    extension was built, instead of producer attributes (a type and a dict lookup each).

    State it owns is set by :meth:`_init_ledger`; what it needs from the class is declared
    below (set by ``Producer.__init__``).
    """

    failed: int
    """Records that failed delivery so far."""
    _hot: HotPath
    _failures: list[KafkaClientError]
    _observed: bool
    """Whether an OpenTelemetry SDK records (re-checked at creation, poll and flush)."""
    # provided by the Producer
    _client: Any  # the confluent-kafka client, or None
    _lock: threading.Lock
    _router: PartitionRouter
    _telemetry: Telemetry | None
    _transactional: bool
    _session: TransactionSession | None
    _produce: Callable[[Any, ProducerRecord, Any], None]

    def _init_ledger(
        self, on_delivery: Callable[[DeliveryHandle], None] | None, known_topics: set[str]
    ) -> None:
        self._hot = HotPath(known_topics, on_delivery)  # on_delivery: called per record
        self.failed = 0
        self._failures = []
        self._observed = False

    @property
    def delivered(self) -> int:
        """Records acknowledged so far."""
        delivered: int = self._hot.delivered
        return delivered

    # ------------------------------------------------------------------ telemetry
    def _check_telemetry(self) -> None:
        # an SDK installed after the Producer was made starts recording at the next check
        tel = self._telemetry
        self._observed = tel is not None and (tel.tracing_enabled() or tel.metrics_enabled())

    def _send_observed(self, client: Any, record: ProducerRecord) -> DeliveryHandle:
        """``send`` with a ``send <topic>`` span, trace headers and delivery metrics."""
        tel = self._telemetry
        assert tel is not None
        handle = TimedHandle(record, self)
        with tel.send_span(record.topic, record.partition, record.key):
            traced = record._replace(headers=tel.inject(record.headers))
            handle._t0 = time.perf_counter()
            try:
                self._produce(client, traced, handle)
            except SdkError as exc:
                exc.record = record  # type: ignore[attr-defined]  # the caller's own record
                raise
        span = self._session.span if self._session is not None else None
        if span is not None:
            span.add()
        return handle

    # ------------------------------------------------------------------ for the handles
    def _poll(self, timeout: float) -> Any:
        """Serve callbacks (``DeliveryHandle.result`` waits with it); translated errors."""
        client = self._client
        if client is None:
            return 0
        with translating("poll"):
            return client.poll(timeout)

    def _delivered(self, handle: DeliveryHandle) -> None:
        hot = self._hot
        hot.delivered += 1
        tel = self._telemetry
        if tel is not None and isinstance(handle, TimedHandle):
            msg = handle._state
            tel.delivered(msg.topic(), msg.partition(), time.perf_counter() - handle._t0)
        callback = hot.callback
        if callback is not None:
            callback(handle)

    def _failed(self, handle: DeliveryHandle, err: Any) -> KafkaClientError:
        self.failed += 1
        error = from_kafka_error(
            err,
            context=f"delivery to {handle.record.topic!r}",
            record=handle.record,
            transactional=self._transactional,
        )
        if error.code in UNKNOWN_PARTITION_CODES:
            self._router.invalidate(handle.record.topic)
        with self._lock:
            self._failures.append(error)
        handle._state = error
        if self._telemetry is not None and isinstance(handle, TimedHandle):
            self._telemetry.delivery_failed(
                handle.record.topic, type(error).__name__, handle.record.partition
            )
        callback = self._hot.callback
        if callback is not None:
            callback(handle)
        return error

    # ------------------------------------------------------------------ for send_batch
    def _on_batch_delivery(self, err: Any, msg: Any) -> None:
        """The one delivery callback shared by every record of ``send_batch`` (no handles)."""
        if err is None:
            self._hot.delivered += 1
            return
        self.failed += 1
        # no handle holds the caller's record: rebuild it (serialized) from the report
        record = ProducerRecord(msg.topic(), msg.value(), msg.key(), msg.headers(), msg.partition())
        error = from_kafka_error(
            err,
            context=f"delivery to {record.topic!r}",
            record=record,
            transactional=self._transactional,
        )
        if error.code in UNKNOWN_PARTITION_CODES:
            self._router.invalidate(record.topic)
        with self._lock:
            self._failures.append(error)

    # ------------------------------------------------------------------ collected failures
    def _take_failures(self) -> list[KafkaClientError]:
        """The delivery failures collected since the last call (and forget them)."""
        with self._lock:
            failures, self._failures = self._failures, []
        return failures

    def _discard_failure(self, error: KafkaClientError | None) -> None:
        """Forget one failure already reported to the caller (``send_and_wait``)."""
        with self._lock:
            self._failures = [f for f in self._failures if f is not error]

    def _raise_failures(self) -> None:
        """Report the failures collected since the last call as one error (and forget them).

        Raises:
            DeliveryError: Records failed; ``.failures`` lists each error with its record.
        """
        failures = self._take_failures()
        if failures:
            first = failures[0]
            raise DeliveryError(
                f"{len(failures)} record(s) failed delivery since the last flush; first: {first}",
                kafka_error=first.kafka_error,
                record=first.record,
                failures=failures,
            )


class TimedHandle(DeliveryHandle):
    """A handle that remembers when it was sent (delivery latency for the metrics)."""

    __slots__ = ("_t0",)
    _t0: float

    def _deliver(self, err: Any, msg: Any) -> None:
        if err is None:
            self._state = msg
            self._owner._delivered(self)
        else:
            self._owner._failed(self, err)

    __call__ = _deliver  # the subclass's own callback (DeliveryHandle.__call__ is the base one)
