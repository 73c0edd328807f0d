"""AsyncConsumer and a real Apicurio registry: Avro decoded, poison dead-lettered."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sdk.aio import AsyncConsumer
from sdk.consumer import ConsumerRecord
from sdk.schemas import avro_deserializer
from tests.sdk.consumer._support import committed, profile, read_topic
from tests.sdk.schemas._front_ends import NOT_FRAMED, UNKNOWN_ID, cold_reader, seed_avro_with_poison

pytestmark = [pytest.mark.broker, pytest.mark.registry]


def test_avro_records_reach_the_async_handler_and_poison_is_dead_lettered(
    kafka_cluster: Any, make_topic: Any, make_group: Any, schema_registry: str
) -> None:
    bs, topic, dlq, group = (
        kafka_cluster.bootstrap_servers,
        make_topic(1),
        make_topic(1),
        make_group(),
    )
    seed_avro_with_poison(bs, topic, schema_registry)
    prof = profile(
        bs,
        "at_least_once",
        group,
        failure={"on_failure": "dlq", "dlq_topic": dlq, "backoff_initial_ms": 0},
    )
    seen: list[Any] = []

    async def handler(record: ConsumerRecord) -> None:
        await asyncio.sleep(0)
        seen.append(record.value)

    async def main() -> Any:
        deserializer = avro_deserializer(cold_reader(schema_registry))
        async with AsyncConsumer(prof, [topic], value_deserializer=deserializer) as consumer:
            return await consumer.run(handler, max_records=6, idle_timeout_s=30)

    stats = asyncio.run(main())
    assert seen == [{"id": 0}, {"id": 1}, {"id": 2}, {"id": 3}]
    assert (stats.deserialization_failures, stats.dead_lettered) == (2, 2)
    assert [m.value() for m in read_topic(bs, dlq, 2)] == [NOT_FRAMED, UNKNOWN_ID]
    assert committed(bs, group, topic) == [6]
