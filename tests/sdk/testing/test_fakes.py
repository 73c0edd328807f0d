"""The in-tree fake clients (sdk.testing.fakes) behave as the unit tests rely on."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, TopicPartition

from sdk.testing.fakes import (
    FakeConsumerClient,
    FakeGroupMetadata,
    FakeMessage,
    FakeProducerClient,
    FakeProducerFactory,
)


def messages(n: int, partition: int = 0) -> list[FakeMessage]:
    return [FakeMessage("t", partition, i, str(i).encode()) for i in range(n)]


def offsets(batch: list[Any]) -> list[tuple[int, int]]:
    return [(m.partition(), m.offset()) for m in batch]


# ---------------------------------------------------------------- scripted failures and hooks
def test_a_scripted_failure_is_raised_once_then_the_call_behaves() -> None:
    timed_out = KafkaError(KafkaError._TIMED_OUT, "commit timed out")
    producer = FakeProducerClient(failures={"commit_transaction": [timed_out]})
    producer.begin_transaction()
    producer.produce("out", b"a")
    with pytest.raises(KafkaException) as info:
        producer.commit_transaction(1)
    assert info.value.args[0] is timed_out
    assert producer.pending == [b"a"] and producer.committed == []
    producer.commit_transaction(1)  # the error was used up
    assert producer.pending == [] and producer.committed == [b"a"]
    assert producer.calls.count("commit_transaction") == 2


def test_failures_shared_by_a_factory_fail_the_first_call_overall() -> None:
    factory = FakeProducerFactory(failures={"init_transactions": [KafkaError._TRANSPORT]})
    first, second = factory({}), factory({})
    with pytest.raises(KafkaException) as info:
        first.init_transactions()
    assert info.value.args[0].code() == KafkaError._TRANSPORT  # a code becomes a KafkaError
    second.init_transactions()
    assert factory.instances == [first, second]


def test_a_hook_runs_before_the_call_and_can_block_it() -> None:
    release = threading.Event()
    entered = threading.Event()

    def hang(client: FakeProducerClient, *args: Any) -> None:
        entered.set()
        release.wait(5)

    producer = FakeProducerClient(hooks={"send_offsets_to_transaction": hang})
    producer.begin_transaction()
    tp = TopicPartition("in", 0, 7)
    call = threading.Thread(
        target=producer.send_offsets_to_transaction, args=([tp], "gm"), daemon=True
    )
    call.start()
    assert entered.wait(5) and call.is_alive()  # hangs until released
    release.set()
    call.join(5)
    assert not call.is_alive() and producer.group_metadata == "gm"


def test_a_committed_transaction_moves_the_shared_group_offsets() -> None:
    group: dict[tuple[str, int], int] = {}
    consumer = FakeConsumerClient(messages(3), group_offsets=group)
    producer = FakeProducerClient(group_offsets=group)
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition("t", 0, 3)], "gm")
    producer.abort_transaction()
    assert consumer.committed([TopicPartition("t", 0)])[0].offset < 0  # aborted: nothing
    producer.begin_transaction()
    producer.send_offsets_to_transaction([TopicPartition("t", 0, 3)], "gm")
    producer.commit_transaction()
    assert consumer.committed([TopicPartition("t", 0)])[0].offset == 3


def test_delivery_reports_are_served_by_poll_and_can_fail() -> None:
    reports: list[tuple[Any, Any]] = []
    failed = KafkaError(KafkaError.MSG_SIZE_TOO_LARGE)
    producer = FakeProducerClient(delivery_errors=[failed])
    producer.begin_transaction()
    for value in (b"big", b"ok"):
        producer.produce("out", value, b"k", on_delivery=lambda e, m: reports.append((e, m)))
    assert reports == []  # served by poll/flush, as librdkafka does
    assert producer.poll(0) == 2
    assert [(e, m.value()) for e, m in reports] == [(failed, b"big"), (None, b"ok")]
    assert producer.pending == [b"ok"]  # a failed record is not in the log
    assert [m.offset() for m in producer.produced] == [0, 1]


def test_list_topics_knows_the_configured_partition_counts() -> None:
    producer = FakeProducerClient(partitions={"out": 3})
    assert sorted(producer.list_topics("out").topics["out"].partitions) == [0, 1, 2]
    assert producer.list_topics("nope").topics["nope"].error is not None


# ---------------------------------------------------------------- consumer positions
def test_consume_serves_in_order_and_seek_rewinds() -> None:
    consumer = FakeConsumerClient(messages(5))
    assert offsets(consumer.consume(3)) == [(0, 0), (0, 1), (0, 2)]
    consumer.seek(TopicPartition("t", 0, 1))
    assert offsets(consumer.consume(10)) == [(0, 1), (0, 2), (0, 3), (0, 4)]
    assert consumer.consume(10) == []
    consumer.seek(TopicPartition("t", 0, OFFSET_BEGINNING))
    assert offsets(consumer.consume(1)) == [(0, 0)]
    assert consumer.seeks == [("t", 0, 1), ("t", 0, OFFSET_BEGINNING)]
    assert consumer.position([TopicPartition("t", 0)])[0].offset == 1


def test_seek_moves_only_its_partition() -> None:
    consumer = FakeConsumerClient(messages(2, partition=0) + messages(2, partition=1))
    assert len(consumer.consume(10)) == 4
    consumer.seek(TopicPartition("t", 1, 1))
    assert offsets(consumer.consume(10)) == [(1, 1)]


def test_assign_starts_at_the_offset_or_the_committed_one() -> None:
    eof = FakeMessage.partition_eof("t", 0, 5)
    consumer = FakeConsumerClient([*messages(4), eof], group_offsets={("t", 0): 2})
    consumer.assign([TopicPartition("t", 0, 3)])
    assert offsets(consumer.consume(10)) == [(0, 3), (0, 5)]  # 4 is a gap (a marker)
    assert consumer.consume(10) == []
    assert consumer.position([TopicPartition("t", 0)])[0].offset == 5
    consumer.assign([TopicPartition("t", 0)])  # no offset: the committed one
    assert offsets(consumer.consume(1)) == [(0, 2)]
    assert consumer.assignment() == [TopicPartition("t", 0)]


def test_batches_are_served_as_scripted_and_seek_only_records() -> None:
    batch = messages(2)
    consumer = FakeConsumerClient(batches=[batch, batch])
    assert consumer.consume(1) == batch  # the whole batch, whatever was asked
    consumer.seek(TopicPartition("t", 0, 0))
    assert consumer.consume(1) == batch and consumer.consume(1) == []
    assert consumer.seeks == [("t", 0, 0)]


# ---------------------------------------------------------------- commits and membership
def test_commit_takes_the_stored_offsets_and_refuses_when_there_are_none() -> None:
    consumer = FakeConsumerClient(topic_in_logs=False)
    with pytest.raises(KafkaException) as info:
        consumer.commit(asynchronous=False)
    assert info.value.args[0].code() == KafkaError._NO_OFFSET
    consumer.store_offsets(offsets=[TopicPartition("t", 0, 4)])
    result = consumer.commit(asynchronous=False)
    assert [(tp.partition, tp.offset, tp.error) for tp in result] == [(0, 4, None)]
    assert consumer.commits == [[(0, 4)]] and consumer.stored == [(0, 4)]
    assert consumer.group_offsets == {("t", 0): 4}


def test_a_per_partition_commit_error_is_in_the_result_once() -> None:
    consumer = FakeConsumerClient(partition_errors={("t", 1): [KafkaError.ILLEGAL_GENERATION]})
    wanted = [TopicPartition("t", 0, 3), TopicPartition("t", 1, 5)]
    result = consumer.commit(offsets=wanted, asynchronous=False)
    assert [tp.error.code() if tp.error else None for tp in result] == [
        None,
        KafkaError.ILLEGAL_GENERATION,
    ]
    assert consumer.group_offsets == {("t", 0): 3}  # the refused partition kept its offset
    consumer.commit(offsets=wanted, asynchronous=False)
    assert consumer.group_offsets == {("t", 0): 3, ("t", 1): 5}


def test_the_member_id_changes_when_the_test_says_so() -> None:
    consumer = FakeConsumerClient(config={"group.id": "g"}, members_after_commit=[None])
    assert consumer.memberid() == "member-1"
    assert consumer.consumer_group_metadata() == FakeGroupMetadata("g", "member-1")
    consumer.commit(offsets=[TopicPartition("t", 0, 1)], asynchronous=False)
    assert consumer.memberid() is None  # the session timed out during that commit
    consumer.member = "member-2"  # rejoined
    assert consumer.memberid() == "member-2"


def test_subscribe_keeps_the_callbacks_and_fire_runs_them() -> None:
    events: list[tuple[str, list[tuple[str, int]]]] = []

    def recorder(name: str) -> Any:
        return lambda c, parts: events.append((name, [(p.topic, p.partition) for p in parts]))

    consumer = FakeConsumerClient(assign_on_subscribe=[("t", 0)])
    consumer.subscribe(
        ["t"], on_assign=recorder("assign"), on_revoke=recorder("revoke"), on_lost=recorder("lost")
    )
    assert events == [("assign", [("t", 0)])]
    consumer.fire("on_assign", [("t", 1)])
    assert consumer.assignment() == [TopicPartition("t", 0), TopicPartition("t", 1)]
    consumer.fire("on_revoke", [TopicPartition("t", 0)])
    consumer.fire("on_lost", [("t", 1)])
    assert [name for name, _ in events] == ["assign", "assign", "revoke", "lost"]
    assert consumer.assignment() == [] and consumer.subscription == ["t"]


def test_a_closed_consumer_refuses_every_call() -> None:
    consumer = FakeConsumerClient(messages(1))
    consumer.close()
    with pytest.raises(RuntimeError, match="Consumer closed"):
        consumer.consume(1)
    assert consumer.closed and consumer.calls == ["close", "consume"]


def test_fake_message_is_a_confluent_message() -> None:
    from confluent_kafka import TIMESTAMP_CREATE_TIME, Message

    m = FakeMessage("t", 2, 9, b"v", key=b"k", headers=[("h", b"1")], timestamp=5)
    assert isinstance(m, Message) and m.error() is None
    assert (m.topic(), m.partition(), m.offset(), m.key(), m.value()) == ("t", 2, 9, b"k", b"v")
    assert m.headers() == [("h", b"1")] and m.timestamp() == (TIMESTAMP_CREATE_TIME, 5)
    eof = FakeMessage.partition_eof("t", 2, 10)
    assert eof.error() is not None and eof.error().code() == KafkaError._PARTITION_EOF
