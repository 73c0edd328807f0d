"""``AsyncProcessor.run`` with bytes in: the Processor's steps on the event loop's own thread.

With fake clients (no broker; test_async_processor.py and the SIGKILL and zombie tests in
test_async_processor_crash.py run the same path on Kafka). These show that the polls and the
handlers run on the loop's thread once records came while every commit runs in the worker
(mid-batch too), that a handler failure goes through the failure policy in the worker with the
records around it copied once, that a commit whose outcome is unknown is recovered in the
worker and the copy still holds every record once, that a handler that never suspends still
lets the loop's other tasks run, and that with tracing on each record's ``process`` span times
its handler; a batch polled while the producer's local queue is half full is queued from the
worker.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from confluent_kafka import KafkaError

from sdk.aio import AsyncProcessor
from sdk.consumer import ConsumerRecord
from sdk.processor import OutputRecord
from sdk.profiles import ProcessingProfile
from sdk.testing.fakes import (
    FakeConsumerClient,
    FakeMessage,
    FakeProducerClient,
    FakeProducerFactory,
)
from tests.sdk.observability._support import make_otel

N = 12


def _profile(max_records_per_transaction: int = 5) -> ProcessingProfile:
    return ProcessingProfile(
        guarantee="exactly_once",
        consumer={
            "guarantee": "exactly_once",
            "bootstrap_servers": "x:1",
            "group_id": "g",
            "batch_size": 4,  # polls of 4: several polls, commits inside a batch
            "failure": {"attempts": 3, "backoff_initial_ms": 0},
        },
        producer={
            "guarantee": "exactly_once",
            "bootstrap_servers": "x:1",
            "transactional_id_prefix": "p-",
        },
        max_records_per_transaction=max_records_per_transaction,
        commit_interval_ms=10_000,  # the record limit decides when a transaction commits
    )


def _consumer(hooks: dict[str, Any] | None = None) -> FakeConsumerClient:
    messages = [FakeMessage("in", 0, i, b"%d" % i, key=b"k") for i in range(N)]
    return FakeConsumerClient(
        messages,
        assignment=[("in", 0)],
        group_offsets={("in", 0): 0},
        topic_in_logs=False,
        hooks=hooks or {},
    )


def _run(
    handler: Any,
    consumer: FakeConsumerClient,
    factory: FakeProducerFactory,
    producer_script: dict[str, list[KafkaError]] | None = None,
    producer_hooks: dict[str, Any] | None = None,
    telemetry: Any = None,
) -> Any:
    async def main() -> Any:
        proc = AsyncProcessor(
            _profile(),
            ["in"],
            instance_id="i0",
            producer_factory=lambda c: factory(c, failures=producer_script, hooks=producer_hooks),
            consumer_factory=lambda c: consumer,
            telemetry=telemetry,
        )
        seen: list[int] = []

        async def stop_after_all(record: ConsumerRecord) -> list[OutputRecord]:
            outputs = await handler(record)
            seen.append(int(record.value))
            if len(set(seen)) == N:
                proc.stop()
            return outputs  # type: ignore[no-any-return]

        async with proc:
            return await asyncio.wait_for(proc.run(stop_after_all), 30)

    return asyncio.run(main())


def _committed(factory: FakeProducerFactory) -> list[bytes]:
    return [v for p in factory.instances for v in p.committed]


async def _copy(record: ConsumerRecord) -> list[OutputRecord]:
    return [OutputRecord("out", record.value, record.key)]


def test_polls_and_handlers_on_the_loops_thread_commits_in_the_worker() -> None:
    main_thread = threading.get_ident()
    polled_in: list[int] = []
    committed_in: list[int] = []
    handled_in: set[int] = set()
    consumer = _consumer({"consume": lambda *_a, **_k: polled_in.append(threading.get_ident())})
    factory = FakeProducerFactory()

    async def copy(record: ConsumerRecord) -> list[OutputRecord]:
        handled_in.add(threading.get_ident())
        return await _copy(record)

    produced_in: list[int] = []
    hooks = {
        "commit_transaction": lambda *_a, **_k: committed_in.append(threading.get_ident()),
        "produce": lambda *_a, **_k: produced_in.append(threading.get_ident()),
    }
    stats = _run(copy, consumer, factory, producer_hooks=hooks)
    assert _committed(factory) == [b"%d" % i for i in range(N)]  # each once, in order
    assert stats.records_in == N and stats.records_out == N
    assert handled_in == {main_thread}  # asyncio.run's loop runs in this thread
    # the first polls wait in the worker; once records came, the polls run on the loop
    assert polled_in[0] != main_thread
    assert main_thread in polled_in
    # every commit in the worker; 12 records at most 5 per transaction: at least 3 of them
    assert len(committed_in) >= 3
    assert main_thread not in committed_in
    assert set(produced_in) == {main_thread}  # the outputs queued on the loop


def test_a_batch_polled_while_the_producer_queue_is_half_full_is_queued_in_the_worker(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    main_thread = threading.get_ident()
    produced_in: list[int] = []
    factory = FakeProducerFactory()
    # librdkafka's len(): records queued; half of queue.buffering.max.messages (100,000)
    monkeypatch.setattr(FakeProducerClient, "__len__", lambda self: 50_000)
    hooks = {"produce": lambda *_a, **_k: produced_in.append(threading.get_ident())}
    _run(_copy, _consumer(), factory, producer_hooks=hooks)
    assert _committed(factory) == [b"%d" % i for i in range(N)]
    assert len(produced_in) == N and main_thread not in produced_in


def test_a_failed_first_attempt_is_retried_in_the_worker_and_every_record_copied_once() -> None:
    main_thread = threading.get_ident()
    attempts: list[tuple[int, int]] = []  # (record, thread the core called from)
    factory = FakeProducerFactory()

    async def flaky(record: ConsumerRecord) -> list[OutputRecord]:
        value = int(record.value)
        attempts.append((value, threading.get_ident()))
        if value == 3 and sum(1 for v, _ in attempts if v == 3) == 1:
            raise ValueError("record 3 fails its first attempt")
        return await _copy(record)

    stats = _run(flaky, _consumer(), factory)
    assert _committed(factory) == [b"%d" % i for i in range(N)]
    assert [v for v, _ in attempts].count(3) == 2  # the first attempt, then one retry
    assert stats.handler_failures == 0 and stats.dead_lettered == 0
    # every handler on the loop's thread: the retry crossed back from the worker
    assert {t for _, t in attempts} == {main_thread}


def test_a_commit_of_unknown_outcome_is_recovered_and_the_copy_holds_every_record_once() -> None:
    factory = FakeProducerFactory()
    err = KafkaError(KafkaError._TIMED_OUT, "commit timed out")
    consumer = _consumer()
    stats = _run(_copy, consumer, factory, producer_script={"commit_transaction": [err]})
    assert stats.ambiguous == 1 and stats.producer_recreations == 1 and stats.rewinds == 1
    assert consumer.seeks and consumer.seeks[0][0] == 0  # rewound to the committed offsets
    assert sorted(_committed(factory)) == sorted(b"%d" % i for i in range(N))
    assert len(_committed(factory)) == N  # the aborted transaction's outputs are not in it


def test_handlers_that_never_suspend_still_let_the_loops_other_tasks_run() -> None:
    ticks: list[int] = []
    factory = FakeProducerFactory()

    async def main() -> None:
        proc = AsyncProcessor(
            _profile(max_records_per_transaction=1000),  # no commit (no await) mid-run
            ["in"],
            instance_id="i0",
            producer_factory=lambda c: factory(c),
            consumer_factory=lambda c: _consumer(),
        )
        done = 0

        async def never_suspends(record: ConsumerRecord) -> list[OutputRecord]:
            nonlocal done
            done += 1
            if done == N:
                proc.stop()
            return [OutputRecord("out", record.value, record.key)]

        async def ticker() -> None:
            while True:
                ticks.append(done)
                await asyncio.sleep(0)

        tick = asyncio.create_task(ticker())
        async with proc:
            await asyncio.wait_for(proc.run(never_suspends), 30)
        tick.cancel()

    asyncio.run(main())
    assert _committed(factory) == [b"%d" % i for i in range(N)]
    # the ticker ran while records were being handled, not only before and after
    assert any(0 < t < N for t in ticks)


def test_traced_each_record_has_its_process_span_timing_the_handler() -> None:
    otel = make_otel()
    factory = FakeProducerFactory()

    async def slow_copy(record: ConsumerRecord) -> list[OutputRecord]:
        await asyncio.sleep(0.002)
        return await _copy(record)

    _run(slow_copy, _consumer(), factory, telemetry=otel.telemetry)
    assert _committed(factory) == [b"%d" % i for i in range(N)]
    spans = [s for s in otel.spans() if s.name.startswith("process")]
    offsets = sorted(s.attributes["messaging.kafka.offset"] for s in spans)  # type: ignore[index]
    assert offsets == list(range(N))  # one span per record
    # each span lasted as long as its handler: the handler ran inside it (crossing per record)
    assert all(s.end_time - s.start_time >= 2_000_000 for s in spans)  # type: ignore[operator]
