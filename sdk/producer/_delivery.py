"""The delivery side of the Producer: what its delivery callbacks report to.

librdkafka calls a delivery callback once per record, from whichever thread serves callbacks
(``poll``/``flush``/``DeliveryHandle.result``). Those callbacks land in the producer's
:class:`DeliveryLedger`: the acknowledged and failed counters, the failures collected until the
next ``flush()`` (each translated once, with its record), the unknown-partition hint to the
partitioner, the delivery metrics and the user's ``on_delivery``. :class:`TimedHandle` is the
handle of the observed send (an OpenTelemetry SDK recording), whose delivery feeds the latency
metric.
"""

from __future__ import annotations

import threading
import time

from confluent_kafka import KafkaError

from sdk._client import KafkaMessage
from sdk.errors import DeliveryError, KafkaClientError, from_kafka_error
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
    """What one producer's delivery callbacks report to.

    The delivered count and the user's callback live on the producer's
    :class:`~sdk.producer._handle.HotPath` (``hot``), which ``send()`` and a plain handle's
    callback read once per record; the rest is here. The Producer is the handles' owner
    (``sdk.producer._records._Owner``): its ``_delivered`` and ``_failed`` are this ledger's
    :meth:`on_delivered` and :meth:`on_failed`.

    Args:
        hot: The producer's per-record state (delivered count, ``on_delivery``).
        router: The producer's partition router (told when a partition count is stale).
        telemetry: Delivery metrics of the observed send's handles (None: none).
        transactional: Whether the producer is exactly_once (decides the translated type).
        lock: Guards :attr:`failures` (callbacks run on any thread); the Producer's lock, which
            also guards the client's creation and replacement.

    Attributes:
        failed: Records that failed delivery so far.
        failures: The failures collected since they were last taken.
    """

    def __init__(
        self,
        hot: HotPath,
        *,
        router: PartitionRouter,
        telemetry: Telemetry | None,
        transactional: bool,
        lock: threading.Lock,
    ) -> None:
        self._hot = hot
        self._router = router
        self._telemetry = telemetry
        self._transactional = transactional
        self._lock = lock
        self.failed = 0
        self.failures: list[KafkaClientError] = []

    # ------------------------------------------------------------------ for the handles
    def on_delivered(self, handle: DeliveryHandle) -> None:
        """A :class:`TimedHandle`'s record was acknowledged."""
        hot = self._hot
        hot.delivered += 1
        tel = self._telemetry
        if tel is not None and isinstance(handle, TimedHandle):
            msg = handle._state
            tel.delivered(msg.topic(), msg.partition(), time.perf_counter() - handle._t0)
        callback = hot.callback
        if callback is not None:
            callback(handle)

    def on_failed(self, handle: DeliveryHandle, err: KafkaError) -> KafkaClientError:
        """A handle's record failed: translate, keep for ``flush()``, put it on the handle."""
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
            self.failures.append(error)
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
    def on_batch_delivery(self, err: KafkaError | None, msg: KafkaMessage) -> None:
        """The one delivery callback of records without a handle (send_batch, outputs)."""
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
            self.failures.append(error)

    # ------------------------------------------------------------------ collected failures
    def take_failures(self) -> list[KafkaClientError]:
        """The delivery failures collected since the last call (and forget them)."""
        with self._lock:
            failures, self.failures = self.failures, []
        return failures

    def discard_failure(self, error: KafkaClientError | None) -> None:
        """Forget one failure already reported to the caller (``send_and_wait``)."""
        with self._lock:
            self.failures = [f for f in self.failures if f is not error]

    def raise_failures(self) -> None:
        """Report the failures collected since the last call as one error (and forget them).

        Raises:
            DeliveryError: Records failed; ``.failures`` lists each error with its record.
        """
        failures = self.take_failures()
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

    def _deliver(self, err: KafkaError | None, msg: KafkaMessage) -> None:
        if err is None:
            self._state = msg
            self._owner._delivered(self)
        else:
            self._owner._failed(self, err)

    __call__ = _deliver  # the subclass's own callback (DeliveryHandle.__call__ is the base one)
