"""The asyncio front ends' batch run ahead on the loop, with fake clients (no broker).

The handlers of a polled batch run on the event loop in one crossing; the sync core then takes
the successes as finished (AsyncConsumer) or takes each outcome in turn (AsyncProcessor). These
show the records the handler gets (decoded when the front end has deserializers) and that a
failure in the middle of a batch goes through the failure policy with the records around it
handled once and every offset stored.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from sdk.aio import AsyncConsumer, AsyncProcessor
from sdk.consumer import ConsumerRecord
from sdk.processor import OutputRecord
from sdk.profiles import ConsumerProfile
from sdk.testing.fakes import FakeConsumerClient, FakeMessage, FakeProducerFactory
from tests.sdk.processor.test_recovery_unit import profile as eos_profile

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _messages(n: int) -> list[FakeMessage]:
    return [FakeMessage("t", 0, i, json.dumps({"n": i}).encode(), key=b"k") for i in range(n)]


def _consumer_client(n: int) -> FakeConsumerClient:
    return FakeConsumerClient(
        batches=[_messages(n)], assign_on_subscribe=[("t", 0)], topic_in_logs=False
    )


def test_a_failure_mid_batch_is_retried_the_others_handled_once_every_offset_stored() -> None:
    client = _consumer_client(6)
    profile = ConsumerProfile(
        guarantee="at_least_once",
        bootstrap_servers="unused:1",
        group_id="g",
        failure={"attempts": 3, "backoff_initial_ms": 0, "on_failure": "stop"},
    )
    calls: list[int] = []

    async def handler(record: ConsumerRecord) -> None:
        calls.append(record.value["n"])
        if record.value["n"] == 3 and calls.count(3) == 1:
            raise ValueError("record 3 fails its first attempt")

    async def main() -> Any:
        async with AsyncConsumer(
            profile, ["t"], value_deserializer="json", client_factory=lambda cfg: client
        ) as consumer:
            return await consumer.run(handler, max_records=6, idle_timeout_s=5)

    stats = asyncio.run(main())
    # the batch ran ahead up to record 3; its retry crossed on its own; 4 and 5 after it
    assert calls == [0, 1, 2, 3, 3, 4, 5]
    assert (stats.handled, stats.handler_failures, stats.retries) == (6, 0, 1)
    assert max(offset for _, offset in client.stored) == 6  # every record's offset stored


def test_the_async_processor_hands_the_handler_decoded_records() -> None:
    offsets: dict[tuple[str, int], int] = {}
    consumer = FakeConsumerClient(
        [FakeMessage("in", 0, i, json.dumps({"n": i}).encode(), key=b"k") for i in range(3)],
        assign_on_subscribe=[("in", 0)],
        group_offsets=offsets,
        topic_in_logs=False,
    )
    factory = FakeProducerFactory()
    seen: list[Any] = []

    async def handler(record: ConsumerRecord) -> list[OutputRecord]:
        seen.append(record.value)
        return [OutputRecord("out", {"twice": record.value["n"] * 2})]

    async def main() -> None:
        async with AsyncProcessor(
            eos_profile(),
            ["in"],
            instance_id="i",
            value_deserializer="json",
            value_serializer="json",
            producer_factory=lambda c: factory(c, group_offsets=offsets),
            consumer_factory=lambda c: consumer,
        ) as processor:
            await processor.run(handler, max_duration_s=2)

    asyncio.run(main())
    assert seen == [{"n": 0}, {"n": 1}, {"n": 2}]  # decoded, not the bytes
    committed = [json.loads(v) for p in factory.instances for v in p.committed]
    assert committed == [{"twice": 0}, {"twice": 2}, {"twice": 4}]
    assert offsets[("in", 0)] == 3
