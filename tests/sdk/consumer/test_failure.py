"""The failure policy on the broker: retries, dead-letter topic with headers, stop, poison pills."""

from __future__ import annotations

from typing import Any

import pytest

from sdk.consumer import Consumer, ConsumerRecord
from sdk.errors import HandlerError, SerializationError, UnknownTopicError
from tests.sdk.consumer._support import committed, profile, read_topic

pytestmark = pytest.mark.broker

FAST = {"backoff_initial_ms": 0, "backoff_max_ms": 0}


def _headers(message: Any) -> dict[str, str]:
    return {k: (v or b"").decode() for k, v in message.headers() or []}


def _dlq_profile(bs: str, guarantee: str, group: str, dlq: str, attempts: int = 2) -> Any:
    return profile(
        bs,
        guarantee,
        group,
        failure={"attempts": attempts, "on_failure": "dlq", "dlq_topic": dlq, **FAST},
    )


@pytest.mark.parametrize("guarantee", ["at_most_once", "at_least_once"])
def test_failing_handler_dead_letters_every_record_with_headers(
    guarantee: str, seeded: Any, make_topic: Any
) -> None:
    bs, topic, group = seeded(3)
    dlq = make_topic(1)
    calls: list[int] = []

    def handler(record: ConsumerRecord) -> None:
        calls.append(record.offset)
        raise ValueError(f"cannot handle {record.value!r}")

    with Consumer(_dlq_profile(bs, guarantee, group, dlq), [topic]) as consumer:
        stats = consumer.run(handler, max_records=3, idle_timeout_s=30)
    assert calls == [0, 0, 1, 1, 2, 2]  # two attempts each
    assert (stats.handler_failures, stats.dead_lettered, stats.handled) == (3, 3, 0)
    assert stats.retries == 3
    assert committed(bs, group, topic) == [3]  # stored only once each DLQ write was acked
    dead = read_topic(bs, dlq, 3)
    assert [(m.key(), m.value()) for m in dead] == [
        (f"k{i}".encode(), str(i).encode()) for i in range(3)
    ]
    h = _headers(dead[1])
    assert h["dlq.topic"] == topic
    assert (h["dlq.partition"], h["dlq.offset"], h["dlq.attempts"]) == ("0", "1", "2")
    assert h["dlq.error.type"] == "ValueError"
    assert h["dlq.error.message"] == "cannot handle b'1'"
    assert h["dlq.stage"] == "handler"
    assert "ValueError" in h["dlq.error"]


def test_retry_then_success_does_not_dead_letter(seeded: Any, make_topic: Any) -> None:
    bs, topic, group = seeded(2)
    dlq = make_topic(1)
    calls: list[int] = []

    def flaky(record: ConsumerRecord) -> None:
        calls.append(record.offset)
        if calls.count(record.offset) < 3:
            raise ConnectionError("transient")

    with Consumer(_dlq_profile(bs, "at_least_once", group, dlq, attempts=3), [topic]) as c:
        stats = c.run(flaky, max_records=2, idle_timeout_s=30)
    assert calls == [0, 0, 0, 1, 1, 1]
    assert (stats.handled, stats.retries, stats.dead_lettered) == (2, 4, 0)


def test_stop_raises_and_leaves_the_record_uncommitted(seeded: Any) -> None:
    bs, topic, group = seeded(5)
    prof = profile(
        bs, "at_least_once", group, failure={"attempts": 2, "on_failure": "stop", **FAST}
    )

    def fails_on_two(record: ConsumerRecord) -> None:
        if record.offset == 2:
            raise RuntimeError("bad record")

    with Consumer(prof, [topic]) as consumer, pytest.raises(HandlerError) as info:
        consumer.run(fails_on_two, idle_timeout_s=30)
    assert info.value.record.offset == 2 and info.value.attempts == 2
    assert isinstance(info.value.__cause__, RuntimeError)
    assert committed(bs, group, topic) == [2]  # 0 and 1 committed, 2 not
    seen: list[int] = []
    with Consumer(prof, [topic]) as again:  # a restart reads the failed record again
        again.run(lambda r: seen.append(r.offset), max_records=3, idle_timeout_s=30)
    assert seen == [2, 3, 4]


def test_stop_under_at_most_once_counts_the_abandoned_records(seeded: Any) -> None:
    bs, topic, group = seeded(5)
    prof = profile(bs, "at_most_once", group, failure={"attempts": 1, "on_failure": "stop"})

    def fails_on_two(record: ConsumerRecord) -> None:
        if record.offset == 2:
            raise RuntimeError("bad record")

    with Consumer(prof, [topic]) as consumer, pytest.raises(HandlerError):
        consumer.run(fails_on_two, max_records=5, idle_timeout_s=30)
    polled = consumer.stats.polled
    assert committed(bs, group, topic) == [polled]  # committed before handling
    assert consumer.stats.abandoned == polled - 2  # the failed record and the rest of the batch


def test_poison_pill_goes_to_the_dlq(seeded: Any, make_topic: Any) -> None:
    bs, topic, group = seeded(3, values=[b'{"n": 0}', b"not json", b'{"n": 2}'])
    dlq = make_topic(1)
    values: list[Any] = []
    prof = _dlq_profile(bs, "at_least_once", group, dlq)
    with Consumer(prof, [topic], value_deserializer="json") as consumer:
        stats = consumer.run(lambda r: values.append(r.value), max_records=3, idle_timeout_s=30)
    assert values == [{"n": 0}, {"n": 2}]
    assert (stats.deserialization_failures, stats.dead_lettered) == (1, 1)
    assert committed(bs, group, topic) == [3]
    (dead,) = read_topic(bs, dlq, 1)
    h = _headers(dead)
    assert dead.value() == b"not json"
    assert (h["dlq.stage"], h["dlq.offset"], h["dlq.attempts"]) == ("deserialize", "1", "0")
    assert h["dlq.error.type"] == "json.decoder.JSONDecodeError"


def test_poison_pill_with_stop_raises_serialization_error(seeded: Any) -> None:
    bs, topic, group = seeded(3, values=[b"1", b"\xff", b"3"])
    prof = profile(bs, "at_least_once", group)
    with (
        Consumer(prof, [topic], value_deserializer="str") as c,
        pytest.raises(SerializationError) as info,
    ):
        c.run(lambda r: None, idle_timeout_s=30)
    assert info.value.record.offset() == 1 and "value" in str(info.value)
    assert committed(bs, group, topic) == [1]


def test_batch_handler_keeps_offset_order_around_a_poison_pill(
    seeded: Any, make_topic: Any
) -> None:
    bs, topic, group = seeded(5, values=[b"0", b"1", b"x", b"3", b"4"])
    dlq = make_topic(1)
    batches: list[list[int]] = []

    def int_or_fail(data: bytes | None, topic: str) -> int:
        return int(data or b"")

    def handler(records: list[ConsumerRecord]) -> None:
        batches.append([r.value for r in records])
        if 4 in batches[-1]:
            raise ValueError("batch with 4 fails")

    prof = _dlq_profile(bs, "at_least_once", group, dlq, attempts=2)
    with Consumer(prof, [topic], value_deserializer=int_or_fail) as consumer:
        stats = consumer.run_batch(handler, max_records=5, idle_timeout_s=30)
    # one poll usually returns all five: [[0, 1], [3, 4], [3, 4]]; poll boundaries may split
    # batches further, but the pill always splits them and order is kept
    failing = batches[-1]
    assert batches[-2] == failing and 4 in failing  # two attempts of the failing batch
    assert [v for b in batches[:-1] for v in b] == [0, 1, 3, 4]
    assert all(2 not in b for b in batches)
    assert stats.deserialization_failures == 1
    assert stats.handler_failures == stats.dead_lettered - 1 == len(failing)
    assert committed(bs, group, topic) == [5]
    dead = read_topic(bs, dlq, 1 + len(failing))
    assert [m.value() for m in dead] == [b"x"] + [str(v).encode() for v in failing]


def test_unknown_dlq_topic_raises_and_stores_nothing(seeded: Any) -> None:
    bs, topic, group = seeded(2)
    prof = _dlq_profile(bs, "at_least_once", group, "no-such-dlq-topic", attempts=1)

    def fail(record: ConsumerRecord) -> None:
        raise ValueError("x")

    with Consumer(prof, [topic]) as consumer, pytest.raises(UnknownTopicError) as info:
        consumer.run(fail, idle_timeout_s=30)
    assert "no-such-dlq-topic" in str(info.value)
    assert committed(bs, group, topic) == [-1001]  # never a silent skip


def test_batch_stop_raises_with_the_batch_and_commits_nothing_of_it(seeded: Any) -> None:
    bs, topic, group = seeded(6)
    prof = profile(bs, "at_least_once", group, failure={"attempts": 1, "on_failure": "stop"})

    def fail_from_three(records: list[ConsumerRecord]) -> None:
        if any(r.offset >= 3 for r in records):
            raise RuntimeError("sink down")

    with Consumer(prof, [topic]) as consumer:
        consumer.run_batch(fail_from_three, max_records=3, idle_timeout_s=30)  # 0..2 succeed
        with pytest.raises(HandlerError) as info:
            consumer.run_batch(fail_from_three, idle_timeout_s=30)
    failed = info.value.record
    assert isinstance(failed, list) and failed[0].offset == 3  # usually [3, 4, 5]
    assert committed(bs, group, topic) == [3]  # the batches before it, nothing of it


def test_iterator_user_can_dead_letter_then_ack(seeded: Any, make_topic: Any) -> None:
    bs, topic, group = seeded(3)
    dlq = make_topic(1)
    with Consumer(_dlq_profile(bs, "at_least_once", group, dlq), [topic]) as consumer:
        for record in consumer.records(max_records=3, idle_timeout_s=30):
            if record.offset == 1:
                consumer.dead_letter(record, ValueError("rejected by the user"))
            consumer.ack(record)
    assert committed(bs, group, topic) == [3]
    (dead,) = read_topic(bs, dlq, 1)
    h = _headers(dead)
    assert (h["dlq.stage"], h["dlq.offset"], h["dlq.error.message"]) == (
        "user",
        "1",
        "rejected by the user",
    )
