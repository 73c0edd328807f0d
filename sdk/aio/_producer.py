"""The asyncio producer: the SDK :class:`~sdk.producer.Producer` driven from an event loop.

No second producer: every record goes through the sync Producer's ``send()`` (serializers,
partitioner, error seam, guarantee settings), called on the event loop's thread, since
``produce()`` only queues. What would block is moved off the loop:

* each record's delivery handle *is* its future's resolver (``FutureHandle``: no handle to
  future map, no per-record callback chain); delivery reports are served on the loop, by a
  poller task (``poll(0)`` every 2 ms while records are in flight) and by :meth:`flush`, so a
  future is resolved on the loop thread without a thread hop;
* ``commit_transaction``, ``abort_transaction``, ``init_transactions``, ``close`` and the first
  send to a topic (its metadata check) run in a worker thread; a delivery report served there
  is queued and the queue handed to the loop with one ``call_soon_threadsafe`` per drain,
  not one per record;
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
import collections
import contextlib
import functools
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from typing import Any, TypeVar, TypeVarTuple

from sdk._config import config_int
from sdk._deprecation import renamed, renamed_default
from sdk.aio._futures import FutureHandle, LoopProducer, resolve
from sdk.errors import (
    ClosedError,
    ConfigurationError,
    KafkaTimeoutError,
    SdkError,
)
from sdk.producer import DeliveryHandle, Producer, ProducerRecord, RecordMetadata
from sdk.profiles import ProducerProfile

__all__ = ["AsyncProducer"]

T = TypeVar("T")
Ts = TypeVarTuple("Ts")
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
        # on_delivery: only the observed path's handles (an OpenTelemetry SDK recording) use
        # it; a FutureHandle resolves its own future
        self._sync = LoopProducer(profile, on_delivery=self._observed_delivered, **options)
        self._sync.from_thread = self._from_thread
        self._slot = self._sync._slot  # the sync Producer's client and its lifecycle
        self._max_queued = config_int(self._sync.config, "queue.buffering.max.messages", 100_000)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._observed: dict[DeliveryHandle, asyncio.Future[RecordMetadata]] = {}
        self._crossing: collections.deque[DeliveryHandle] = collections.deque()
        self._drain_scheduled = False
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
            await self._off_loop(self._slot.ensure)

    async def close(self, timeout_s: float = 30.0, *, timeout: float | None = None) -> None:
        """Deliver what is queued, stop the poller, release the client.

        Records still queued after ``timeout_s`` are purged: their futures fail (nothing is
        left pending forever), and the timeout is raised.

        Args:
            timeout_s: Seconds to wait for outstanding deliveries.
            timeout: Deprecated name of ``timeout_s``, removed in 0.3.

        Raises:
            KafkaTimeoutError: Records were still undelivered after ``timeout_s``.
            DeliveryError: Records failed since the last flush.
        """
        where = "AsyncProducer.close"
        timeout_s = renamed_default(where, "timeout", timeout, "timeout_s", timeout_s)
        if self._closed:
            return
        try:
            if self._slot.client is not None:
                try:
                    await self.flush(timeout_s)
                except KafkaTimeoutError:
                    self._purge()
                    raise
        finally:
            self._closed = True
            try:
                await self._off_loop(self._sync.close, 0)
            finally:
                await self._stop_poller()

    def _purge(self) -> None:
        """Drop what is still queued; its delivery reports (purged) fail the futures."""
        client = self._slot.client
        if client is not None:
            with contextlib.suppress(Exception):  # a broken client: nothing more to report
                client.purge()
                client.poll(0)
        for fut in self._observed.values():  # nothing can resolve them any more
            if not fut.done():
                fut.set_exception(ClosedError("producer closed before the outcome"))
        self._observed.clear()

    async def _stop_poller(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
            self._poller = None

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
        seen before, for its metadata check and (with a schema registry serializer) the
        registry's answer for its subject: the first record of each topic is serialized once
        in a thread, later ones hit the serializer's cache (``send_nowait`` does all of it on
        the loop).

        Returns:
            Where the record landed.

        Raises:
            ClosedError: The producer is closed.
            SerializationError: A serializer failed.
            UnknownTopicError: The topic does not exist (``check_topics``).
            KafkaClientError: The record failed (the sync Producer's error types).
        """
        if isinstance(topic, ProducerRecord):
            record = topic
        else:
            pairs = list(headers.items()) if isinstance(headers, Mapping) else headers
            record = ProducerRecord(topic, value, key, pairs, partition, timestamp_ms)
        if record.topic not in self._sync._known_topics:  # its first record: off the loop
            await self._off_loop(self._first_of_topic, record)
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
        client = self._slot.client
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
        self._wake.set()
        if type(handle) is FutureHandle:
            return handle.future
        # the observed send (an OpenTelemetry SDK records): a TimedHandle, settled through
        # the sync Producer's on_delivery
        fut: asyncio.Future[RecordMetadata] = loop.create_future()
        if handle.done():
            resolve(fut, handle)
        else:
            self._observed[handle] = fut
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

    async def flush(self, timeout_s: float | None = None, *, timeout: float | None = None) -> None:
        """Wait, without blocking the loop, until every queued record is acknowledged or failed.

        Delivery reports are served on the loop meanwhile (``poll(0)`` every 2 ms), so each
        future resolves on the loop thread.

        Args:
            timeout_s: Seconds to wait; None waits until nothing is queued.
            timeout: Deprecated name of ``timeout_s``, removed in 0.3.

        Raises:
            KafkaTimeoutError: Records were still queued after ``timeout_s``.
            DeliveryError: Records failed since the last flush (``.failures``).
            ConfigurationError: Both ``timeout_s`` and ``timeout`` were given.
        """
        timeout_s = renamed("AsyncProducer.flush", "timeout", timeout, "timeout_s", timeout_s)
        self._bind()
        client = self._slot.client
        if client is None:
            return
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while len(client) > 0:
            if deadline is not None and time.monotonic() >= deadline:
                raise KafkaTimeoutError(
                    f"flush: {len(client)} record(s) still queued after {timeout_s}s; they stay "
                    "queued and may yet be delivered"
                )
            self._sync.poll(0)
            if len(client) > 0:
                await asyncio.sleep(_POLL_EVERY_S)
        self._sync.flush(0)  # nothing queued: raises what failed since the last flush

    # ------------------------------------------------------------------ transactions
    def begin_transaction(self) -> None:
        """Begin a transaction (exactly_once; local, does not block)."""
        self._sync.begin_transaction()

    async def commit_transaction(
        self, timeout_s: float = 60.0, *, timeout: float | None = None
    ) -> None:
        """Flush and commit the open transaction off the loop (errors as the sync Producer).

        Args:
            timeout_s: Seconds to wait.
            timeout: Deprecated name of ``timeout_s``, removed in 0.3.
        """
        where = "AsyncProducer.commit_transaction"
        timeout_s = renamed_default(where, "timeout", timeout, "timeout_s", timeout_s)
        await self._off_loop(self._sync.commit_transaction, timeout_s)

    async def abort_transaction(
        self, timeout_s: float = 60.0, *, timeout: float | None = None
    ) -> None:
        """Abort the open transaction off the loop.

        Args:
            timeout_s: Seconds to wait.
            timeout: Deprecated name of ``timeout_s``, removed in 0.3.
        """
        where = "AsyncProducer.abort_transaction"
        timeout_s = renamed_default(where, "timeout", timeout, "timeout_s", timeout_s)
        await self._off_loop(self._sync.abort_transaction, timeout_s)

    def transaction(
        self, timeout_s: float = 60.0, *, timeout: float | None = None
    ) -> contextlib.AbstractAsyncContextManager[AsyncProducer]:
        """Run the block in one transaction: commit if it succeeds, abort if it raises.

        A cancellation inside the block aborts the transaction (shielded from the
        cancellation) before it propagates: no transaction is left open.

        Args:
            timeout_s: Seconds the commit (or the abort) may take.
            timeout: Deprecated name of ``timeout_s``, removed in 0.3.

        Raises:
            TransactionError: Begin, commit or abort failed (the block's own exception wins
                when both happen).
        """
        where = "AsyncProducer.transaction"
        timeout_s = renamed_default(where, "timeout", timeout, "timeout_s", timeout_s)
        return self._transaction(timeout_s)

    @contextlib.asynccontextmanager
    async def _transaction(self, timeout_s: float) -> AsyncIterator[AsyncProducer]:
        self.begin_transaction()
        try:
            yield self
        except BaseException:
            with contextlib.suppress(SdkError, asyncio.CancelledError):
                await asyncio.shield(self.abort_transaction(timeout_s))
            raise
        await self.commit_transaction(timeout_s)

    # ------------------------------------------------------------------ internals
    def _bind(self) -> asyncio.AbstractEventLoop:
        loop = asyncio.get_running_loop()
        if self._loop is None:
            self._loop = loop
            self._sync.loop, self._sync.loop_thread = loop, threading.get_ident()
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
            client = self._slot.client
            if client is None or len(client) == 0:
                self._wake.clear()
                await self._wake.wait()
                continue
            with contextlib.suppress(SdkError):  # a fatal error also fails the records
                self._sync.poll(0)
            await asyncio.sleep(_POLL_EVERY_S)

    def _observed_delivered(self, handle: DeliveryHandle) -> None:
        """on_delivery of the sync Producer: only observed handles need it."""
        if type(handle) is FutureHandle:
            return
        if threading.get_ident() == self._sync.loop_thread:
            self._settle(handle)
        else:
            self._from_thread(handle)

    def _from_thread(self, handle: DeliveryHandle) -> None:
        """A report served in a worker thread: queue it; one loop callback per drain."""
        self._crossing.append(handle)
        if not self._drain_scheduled and self._loop is not None:
            self._drain_scheduled = True
            self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        self._drain_scheduled = False  # first: a report queued from now on schedules anew
        crossing = self._crossing
        while crossing:
            self._settle(crossing.popleft())

    def _settle(self, handle: DeliveryHandle) -> None:
        if type(handle) is FutureHandle:
            resolve(handle.future, handle)
            return
        fut = self._observed.pop(handle, None)
        if fut is not None:
            resolve(fut, handle)

    def _first_of_topic(self, record: ProducerRecord) -> None:
        """In a thread: a topic's metadata check and (a registry serializer) its subject's lookup.

        The record is serialized once here, so the registry's answer is cached before the
        record's own serialization on the loop (same result: it depends only on the record).
        """
        sync = self._sync
        sync.check_topic(record)
        if sync._path.asks_registry:
            sync._path.serialize(record)

    async def _off_loop(self, fn: Callable[[*Ts], T], *args: *Ts) -> T:
        loop = self._bind()
        return await loop.run_in_executor(None, functools.partial(fn, *args))
