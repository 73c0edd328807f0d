"""asyncio front ends on the SDK's one core (issue #18): same profiles, same guarantees.

* :class:`AsyncProducer` — ``await send(...)``, ``send_nowait(...)`` returning a future,
  ``async with producer.transaction()``; every record goes through the sync
  :class:`~sdk.producer.Producer` (serializers, partitioner, error seam), called on the loop
  thread; what blocks runs in a worker thread. See docs/asyncio.md.
"""

from sdk.aio._producer import AsyncProducer

__all__ = ["AsyncProducer"]
