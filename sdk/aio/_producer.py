"""The asyncio producer: the SDK :class:`~sdk.producer.Producer` driven from an event loop.

No second producer: every record goes through the sync Producer's ``send()`` (serializers,
partitioner, error seam, guarantee settings), called on the event loop's thread, since
``produce()`` only queues. What would block is moved off the loop:

* delivery reports are served by a poller task on the loop (``poll(0)`` while records are in
  flight), so a record's future is resolved on the loop thread, without a thread hop;
* ``flush``, ``commit_transaction``, ``abort_transaction``, ``init_transactions`` and the first
  send to a topic (its metadata check) run in a worker thread; a delivery report served there
  (librdkafka's flush serves them) resolves its future through ``call_soon_threadsafe``;
* a full local queue (``queue.buffering.max.messages``) is waited for with ``await`` by
  :meth:`AsyncProducer.send`; :meth:`AsyncProducer.send_nowait` raises instead of blocking.
* the first record to a topic the producer has not seen is checked against the broker's
  metadata (``check_topics``): :meth:`AsyncProducer.send` does that off the loop,
  :meth:`AsyncProducer.send_nowait` on it (one metadata request, bounded by
  ``metadata_timeout_s``).

Cancellation: a task cancelled inside ``async with producer.transaction()`` aborts the
transaction before the cancellation propagates (the abort is shielded), so no transaction is
left open; a cancelled ``await producer.send(...)`` leaves the record queued (it may still be
delivered, as with the sync Producer's fire-and-forget ``send``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import threading
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any, TypeVar

from sdk.errors import ClosedError, ConfigurationError, KafkaTimeoutError, SdkError
from sdk.producer import DeliveryHandle, Producer, ProducerRecord, RecordMetadata
from sdk.profiles import ProducerProfile

__all__ = ["AsyncProducer"]

T = TypeVar("T")
_POLL_EVERY_S = 0.002
"""How often the poller serves delivery reports while records are in flight."""


class AsyncProducer:
    """Send records from asyncio code under a :class:`ProducerProfile`'s guarantee.

    Example::

        async with AsyncProducer(profile) as producer:
            meta = await producer.send("orders", b"...", key=b"order-1")   # acknowledged
            pending = [producer.send("orders", v) for v in values]        # not waiting
            await asyncio.gather(*pending)
            async with producer.transaction():                             # exactly_once
                producer.send("orders", b"a")
                producer.send("orders", b"b")

    Args:
        profile: The producer profile (the same YAML file drives sync and async clients).
        **options: The :class:`~sdk.producer.Producer` keyword arguments (serializers,
            partitioner, ``transactional_id``, ``telemetry``, ...), except ``on_delivery``:
            each ``send`` returns a future instead.

    Raises:
        ConfigurationError: As the sync Producer (bad profile or option).
    """

    def __init__(self, profile: ProducerProfile, **options: Any) -> None:
        if "on_delivery" in options:
            raise ConfigurationError(
                "AsyncProducer: each send() returns a future; on_delivery is not taken",
                field="on_delivery",
            )
        self.profile = profile
        # a full queue must not block the loop: the sync send gives up after one short wait
        options.setdefault("queue_full_timeout_s", 0.01)
        self._sync = Producer(profile, on_delivery=self._delivered, **options)
        self._max_queued = int(self._sync.config.get("queue.buffering.max.messages", 100_000))
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread = 0
        self._futures: dict[DeliveryHandle, asyncio.Future[RecordMetadata]] = {}
        self._poller: asyncio.Task[None] | None = None
        self._wake = asyncio.Event()
        self._closed = False

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> AsyncProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def sync(self) -> Producer:
        """The sync Producer underneath (counters: ``delivered``, ``failed``)."""
        return self._sync

    async def start(self) -> None:
        """Create the client (exactly_once: ``init_transactions``) off the event loop."""
        self._bind()
        if self._sync.transactional:
            await self._off_loop(self._sync.init_transactions)
        else:
            await self._off_loop(self._sync._ensure_client)

    async def close(self, timeout: float = 30.0) -> None:
        """Deliver what is queued (off the loop), stop the poller, release the client.

        Raises:
            KafkaTimeoutError: Records were still undelivered after ``timeout``.
            DeliveryError: Records failed since the last flush.
        """
        if self._closed:
            return
        self._closed = True
        try:
            await self._off_loop(self._sync.close, timeout)
        finally:
            if self._poller is not None:
                self._poller.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await self._poller
                self._poller = None
            for fut in self._futures.values():  # nothing can resolve them any more
                if not fut.done():
                    fut.set_exception(ClosedError("producer closed before the outcome"))
            self._futures.clear()

    # ------------------------------------------------------------------ sending
    async def send(
        self,
        topic: str | ProducerRecord,
        value: Any = None,
        *,
        key: Any = None,
        headers: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> RecordMetadata:
        """Queue one record and wait until the broker acknowledged it.

        Waits (without blocking the loop) for room in the local queue and, for a topic not
        seen before, for its metadata check.

        Returns:
            Where the record landed.

        Raises:
            ClosedError: The producer is closed.
            SerializationError: A serializer failed.
            UnknownTopicError: The topic does not exist (``check_topics``).
            KafkaClientError: The record failed (the sync Producer's error types).
        """
        record = topic if isinstance(topic, ProducerRecord) else ProducerRecord(topic, value)
        if record.topic not in self._sync._known_topics:  # its metadata check: off the loop
            await self._off_loop(self._sync.check_topic, record)
        while True:
            try:
                fut = self.send_nowait(topic, value, key, headers, partition, timestamp_ms)
            except KafkaTimeoutError as exc:
                if not getattr(exc, "queue_full", False):
                    raise
                self._wake.set()
                await asyncio.sleep(_POLL_EVERY_S)  # the poller drains the queue meanwhile
                continue
            return await fut

    def send_nowait(
        self,
        topic: str | ProducerRecord,
        value: Any = None,
        key: Any = None,
        headers: Any = None,
        partition: int | None = None,
        timestamp_ms: int | None = None,
    ) -> asyncio.Future[RecordMetadata]:
        """Queue one record now; return a future that resolves on acknowledgement.

        Keeping the future (or ignoring it) does not wait. A failure sets the future's
        exception (the sync Producer's error type) and is also collected for the next
        :meth:`flush`, as with the sync Producer's ``send``.

        Raises:
            ClosedError: The producer is closed.
            SerializationError: A serializer failed.
            KafkaTimeoutError: The local queue is full (``queue_full`` is True on it); await
                :meth:`send` to wait for room instead.
            KafkaClientError: librdkafka refused the record (it was not queued).
        """
        if self._closed:
            raise ClosedError("AsyncProducer.send_nowait() after close()")
        loop = self._bind()
        client = self._sync._client
        if client is not None and len(client) >= self._max_queued:
            self._full()
        try:
            handle = self._sync.send(
                topic,
                value,
                key=key,
                headers=headers,
                partition=partition,
                timestamp_ms=timestamp_ms,
            )
        except KafkaTimeoutError as exc:
            if "stayed full" in str(exc):
                self._full(exc)
            raise
        fut: asyncio.Future[RecordMetadata] = loop.create_future()
        if handle.done():  # resolved already (e.g. an error report served inside send)
            self._resolve(fut, handle)
            return fut
        self._futures[handle] = fut
        # a failure nobody awaits is still reported by flush() (DeliveryError), as with the
        # sync Producer: asyncio need not log it as "never retrieved"
        fut.add_done_callback(_retrieved)
        self._wake.set()
        return fut

    def _full(self, cause: BaseException | None = None) -> None:
        error = KafkaTimeoutError(
            f"AsyncProducer: the local queue is full ({self._max_queued:,} records, "
            "queue.buffering.max.messages, or its kbytes limit); await send() to wait for "
            "room, or flush()"
        )
        error.queue_full = True  # type: ignore[attr-defined]
        raise error from cause

    async def send_many(self, records: Iterable[ProducerRecord]) -> list[RecordMetadata]:
        """Send each record and wait for all of them; the first failure is raised.

        Raises:
            KafkaClientError: A record failed (the others were still waited for).
        """
        futures = [self.send(r) for r in records]  # each waits for room and its report
        results = await asyncio.gather(*futures, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return [r for r in results if isinstance(r, RecordMetadata)]

    async def flush(self, timeout: float | None = None) -> None:
        """Wait (off the loop) until every queued record is acknowledged or failed.

        Raises:
            KafkaTimeoutError: Records were still queued after ``timeout``.
            DeliveryError: Records failed since the last flush (``.failures``).
        """
        await self._off_loop(self._sync.flush, timeout)

    # ------------------------------------------------------------------ transactions
    def begin_transaction(self) -> None:
        """Begin a transaction (exactly_once; local, does not block)."""
        self._sync.begin_transaction()

    async def commit_transaction(self, timeout: float = 60.0) -> None:
        """Flush and commit the open transaction off the loop (errors as the sync Producer)."""
        await self._off_loop(self._sync.commit_transaction, timeout)

    async def abort_transaction(self, timeout: float = 60.0) -> None:
        """Abort the open transaction off the loop."""
        await self._off_loop(self._sync.abort_transaction, timeout)

    @contextlib.asynccontextmanager
    async def transaction(self, timeout: float = 60.0) -> AsyncIterator[AsyncProducer]:
        """Run the block in one transaction: commit if it succeeds, abort if it raises.

        A cancellation inside the block aborts the transaction (shielded from the
        cancellation) before it propagates: no transaction is left open.

        Raises:
            TransactionError: Begin, commit or abort failed (the block's own exception wins
                when both happen).
        """
        self.begin_transaction()
        try:
            yield self
        except BaseException:
            with contextlib.suppress(SdkError, asyncio.CancelledError):
                await asyncio.shield(self.abort_transaction(timeout))
            raise
        await self.commit_transaction(timeout)

    # ------------------------------------------------------------------ internals
    def _bind(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop, self._loop_thread = loop, threading.get_ident()
        elif loop is not self._loop:
            raise ConfigurationError(
                "AsyncProducer: used from a second event loop; make one per loop",
                field="loop",
            )
        if self._poller is None:
            self._poller = loop.create_task(self._poll_loop(), name="AsyncProducer poller")
        return loop

    async def _poll_loop(self) -> None:
        """Serve delivery reports on the loop while records are in flight."""
        while True:
            if not self._futures:
                self._wake.clear()
                await self._wake.wait()
            with contextlib.suppress(SdkError):  # a fatal error also fails the records
                self._sync.poll(0)
            await asyncio.sleep(_POLL_EVERY_S)

    def _delivered(self, handle: DeliveryHandle) -> None:
        """The sync Producer's delivery callback (loop thread, or a flushing worker thread)."""
        if threading.get_ident() == self._loop_thread:
            self._settle(handle)
        elif self._loop is not None:
            self._loop.call_soon_threadsafe(self._settle, handle)

    def _settle(self, handle: DeliveryHandle) -> None:
        fut = self._futures.pop(handle, None)
        if fut is not None:
            self._resolve(fut, handle)

    @staticmethod
    def _resolve(fut: asyncio.Future[RecordMetadata], handle: DeliveryHandle) -> None:
        if fut.done():  # cancelled by its awaiter: the outcome has no one to tell
            return
        error = handle.exception()
        if error is not None:
            fut.set_exception(error)
        else:
            fut.set_result(handle.result(0))

    async def _off_loop(self, fn: Callable[..., T], *args: Any) -> T:
        loop = self._bind()
        return await loop.run_in_executor(None, functools.partial(fn, *args))


def _retrieved(fut: asyncio.Future[Any]) -> None:
    if not fut.cancelled():
        fut.exception()
