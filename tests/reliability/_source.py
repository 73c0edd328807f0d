"""The first pipeline stage: an SDK ``Producer`` writing numbered records under a guarantee.

Records: key ``k<i % keys>``, value ``str(i)``, header ``ts`` = wall-clock nanoseconds at send
(the soak mode measures end-to-end latency from it). The stage is paced (``rate`` records/s)
and gated by an *allowance* the pipeline raises phase by phase, so every fault lands while
records are still flowing.

What each guarantee's caller does on a failure (the code is the documentation):

* ``exactly_once``: records go in transactions of ``chunk`` records (``with
  producer.transaction()``); a failed transaction is aborted (or the producer recreated, which
  aborts it on the coordinator) and the whole chunk is sent again.
* ``at_least_once``: idempotent sends; records listed in a ``DeliveryError`` are sent again.
* ``at_most_once``: failures are counted, never sent again.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from sdk.errors import DeliveryError, SdkError
from sdk.producer import DeliveryHandle, Producer, ProducerRecord
from sdk.profiles import Guarantee, ProducerProfile


class SourceStage(threading.Thread):
    """Produce ``records`` numbered records to ``topic`` in a background thread."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        guarantee: Guarantee,
        records: int,
        *,
        rate: float,
        keys: int = 1000,
        chunk: int = 2000,
        log: Callable[[str], None] = print,
    ) -> None:
        super().__init__(name=f"source-{guarantee.value}", daemon=True)
        self.bootstrap, self.topic, self.guarantee = bootstrap, topic, guarantee
        self.records, self.rate, self.keys, self.chunk, self.log = records, rate, keys, chunk, log
        self.acked = 0
        self.failed = 0
        self.retried_chunks = 0
        self.next_offsets: dict[int, int] = {}
        self.error: BaseException | None = None
        self._allowance = 0
        self._cv = threading.Condition()

    # ------------------------------------------------------------------ control
    def allow(self, upto: int) -> None:
        """Let the stage produce records ``0 .. upto-1``."""
        with self._cv:
            self._allowance = max(self._allowance, min(upto, self.records))
            self._cv.notify_all()

    def offsets_total(self) -> int:
        """Sum over partitions of (last acknowledged offset + 1)."""
        return sum(self.next_offsets.values())

    # ------------------------------------------------------------------ thread
    def _profile(self) -> ProducerProfile:
        extra: dict[str, Any] = {}
        if self.guarantee is Guarantee.EXACTLY_ONCE:
            extra = {"transactional_id": f"{self.topic}-source", "transaction_timeout_ms": 30_000}
        return ProducerProfile(
            guarantee=self.guarantee, bootstrap_servers=self.bootstrap, linger_ms=20, **extra
        )

    def _new_producer(self) -> Producer:
        return Producer(self._profile(), key_serializer="str", value_serializer="str")

    def run(self) -> None:
        try:
            self._produce()
        except BaseException as exc:  # reported by the pipeline
            self.error = exc
            self.log(f"[source] stopped by {exc!r}")

    def _produce(self) -> None:
        producer = self._new_producer()
        due = time.monotonic()
        sent = 0
        try:
            while sent < self.records:
                with self._cv:
                    self._cv.wait_for(lambda s=sent: self._allowance > s)  # type: ignore[misc]
                    end = min(sent + self.chunk, self._allowance)
                due = max(due, time.monotonic()) + (end - sent) / self.rate  # steady, no bursts
                pause = due - time.monotonic() - (end - sent) / self.rate
                if pause > 0:
                    time.sleep(pause)
                batch = [
                    ProducerRecord(
                        self.topic,
                        str(i),
                        key=f"k{i % self.keys}",
                        headers=[("ts", str(time.time_ns()))],
                    )
                    for i in range(sent, end)
                ]
                producer = self._send(producer, batch)
                sent = end
        finally:
            with contextlib.suppress(SdkError):
                producer.close(30)

    def _note(self, handles: list[DeliveryHandle]) -> None:
        for handle in handles:
            if handle.done() and handle.exception() is None:
                meta = handle.result(0)
                if meta.offset is None or meta.offset < 0:  # acks=0 (at_most_once): no offset
                    self.acked += 1
                    continue
                if meta.offset + 1 > self.next_offsets.get(meta.partition, 0):
                    self.next_offsets[meta.partition] = meta.offset + 1
                self.acked += 1

    def _send(self, producer: Producer, batch: list[ProducerRecord]) -> Producer:
        if self.guarantee is Guarantee.EXACTLY_ONCE:
            return self._send_transaction(producer, batch)
        while batch:
            handles = producer.send_many(batch)
            try:
                producer.flush(120)
                batch = []
            except DeliveryError as exc:
                self.failed += len(exc.failures)
                self.log(f"[source] {len(exc.failures)} records failed: {exc.failures[0]!r}")
                batch = [f.record for f in exc.failures if f.record is not None]
                if self.guarantee is Guarantee.AT_MOST_ONCE:
                    batch = []  # the caller of an at-most-once producer does not send again
                else:
                    self.retried_chunks += 1
            self._note(handles)
        return producer

    def _send_transaction(self, producer: Producer, batch: list[ProducerRecord]) -> Producer:
        for attempt in range(1, 21):
            try:
                with producer.transaction(timeout_s=60):
                    handles = producer.send_many(batch)
                self._note(handles)
                return producer
            except SdkError as exc:
                self.retried_chunks += 1
                self.log(f"[source] transaction attempt {attempt} failed: {exc!r}; resending")
                with contextlib.suppress(SdkError):
                    producer.abort_transaction(30)
                with contextlib.suppress(SdkError):
                    producer.close(5)
                producer = self._new_producer()  # init_transactions fences/aborts the old one
        raise RuntimeError("20 transactions in a row failed")
