"""The asyncio producer's delivery futures: a delivery handle that resolves its own future.

Each record the asyncio producer queues gets a :class:`FutureHandle`, the sync Producer's
delivery handle with an asyncio future on it: librdkafka's delivery callback counts the
delivery as the sync handle does and settles the future, on the loop thread directly, or
through the producer's drain when the report was served in a worker thread.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError

from sdk._client import KafkaMessage
from sdk.errors import KafkaClientError
from sdk.producer import DeliveryHandle, Producer, ProducerRecord, RecordMetadata

__all__ = ["FutureHandle", "LoopProducer", "resolve"]


class FutureHandle(DeliveryHandle):
    """A delivery handle that resolves its record's asyncio future itself."""

    __slots__ = ("future",)

    def __init__(self, record: ProducerRecord, owner: LoopProducer) -> None:
        super().__init__(record, owner)
        loop = owner.loop
        assert loop is not None  # AsyncProducer binds the loop before the first send
        self.future: asyncio.Future[RecordMetadata] = loop.create_future()

    def _deliver(self, err: KafkaError | None, msg: KafkaMessage) -> None:
        """The librdkafka delivery callback: count as the sync handle does, then resolve."""
        owner: Any = self._owner  # a LoopProducer (no isinstance check per record)
        if err is None:
            self._state = msg
            owner._hot.delivered += 1
        else:
            owner._failed(self, err)  # translated, collected for flush(), on _state
        if threading.get_ident() == owner.loop_thread:
            resolve(self.future, self)
        else:
            owner.from_thread(self)

    __call__ = _deliver


class LoopProducer(Producer):
    """The sync Producer whose ``send`` handles carry an asyncio future (one per record)."""

    _handle_type = FutureHandle
    loop: asyncio.AbstractEventLoop | None = None
    loop_thread = 0
    from_thread: Callable[[DeliveryHandle], None]


def resolve(fut: asyncio.Future[RecordMetadata], handle: DeliveryHandle) -> None:
    """Settle ``fut`` from a resolved handle (on the loop thread)."""
    if fut.done():  # cancelled by its awaiter: the outcome has no one to tell
        return
    state = handle._state
    if isinstance(state, KafkaClientError):
        fut.set_exception(state)
        # a failure nobody awaits is still reported by flush() (DeliveryError), as with the
        # sync Producer: asyncio must not log it as "never retrieved"
        fut.exception()
    else:
        fut.set_result(
            RecordMetadata(state.topic(), state.partition(), state.offset(), state.timestamp()[1])
        )
