"""asyncio front ends on the SDK's one core: same profiles, same guarantees.

* :class:`AsyncProducer` — ``await send(...)``, ``send_nowait(...)`` returning a future,
  ``async with producer.transaction()``; every record goes through the sync
  :class:`~sdk.producer.Producer` (serializers, partitioner, error seam), called on the loop
  thread; what blocks runs in a worker thread.
* :class:`AsyncConsumer` — ``await run(async_handler)`` and ``async for`` with ``ack()``; the
  sync :class:`~sdk.consumer.Consumer` loop runs unchanged in one worker thread, the handler
  on the loop.
* :class:`AsyncProcessor` — read-process-write with an async handler; the sync
  :class:`~sdk.processor.Processor` (one transactional session) runs unchanged in one worker
  thread; a cancellation aborts its open transaction.
* :class:`AsyncDatabaseSink` — exactly-once into a database with an async driver
  (:func:`async_postgresql`); the sync :class:`~sdk.sink.DatabaseSink` runs unchanged in one
  worker thread, its statements and the handler on the loop, on one connection.

See docs/asyncio.md.
"""

from sdk.aio._consumer import AsyncConsumer
from sdk.aio._processor import AsyncProcessor
from sdk.aio._producer import AsyncProducer
from sdk.aio._sink import AsyncDatabase, AsyncDatabaseSink, AsyncTransaction, async_postgresql

__all__ = [
    "AsyncConsumer",
    "AsyncDatabase",
    "AsyncDatabaseSink",
    "AsyncProcessor",
    "AsyncProducer",
    "AsyncTransaction",
    "async_postgresql",
]
