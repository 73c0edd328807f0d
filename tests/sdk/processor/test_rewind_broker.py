"""The rewind to the committed offsets on a real broker, under both rebalance protocols.

CI found a Processor crash here: after an ambiguous commit (its answer dropped for 20 s) the
rewind's ``committed()`` timed out past its retries and the processor exited with
``KafkaTimeoutError``. The rewind now assigns the partitions again when ``committed()`` keeps
timing out (librdkafka then reads the committed offsets itself), which the eager protocol
only takes as ``assign()`` of the whole assignment.

The database sink's rewind goes to the database's position, not Kafka's: when its ``seek()``
is refused it reassigns at that offset (``at_offsets=True``); before, its fallback called the
incremental calls inside ``suppress(Exception)``, which under the eager protocol did nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from sdk._assignment import reassign
from sdk.errors import KafkaClientError
from sdk.processor._positions import rewind_to_committed
from sdk.processor._records import ProcessorStats
from sdk.sink._positions import Holdings
from sdk.sink._records import SinkStats

pytestmark = [pytest.mark.broker]

STRATEGIES = ["range", "cooperative-sticky"]


class _CommittedTimesOut:
    """A real consumer whose ``committed()`` times out, as it did behind a silent coordinator."""

    def __init__(self, consumer: Consumer, code: int = KafkaError._TIMED_OUT) -> None:
        self._consumer = consumer
        self._code = code
        self.asked = 0

    def committed(self, partitions: list[TopicPartition], timeout: float = -1) -> Any:
        self.asked += 1
        raise KafkaException(KafkaError(self._code, "Failed to get committed offsets"))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._consumer, name)


class _SeekRefused:
    """A real consumer whose ``seek()`` is refused, as for a partition not fetching yet."""

    def __init__(self, consumer: Consumer) -> None:
        self._consumer = consumer
        self.refused = 0

    def seek(self, partition: TopicPartition) -> None:
        self.refused += 1
        raise KafkaException(KafkaError(KafkaError._STATE, "Partition not fetching"))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._consumer, name)


@pytest.fixture
def read_past_committed(
    kafka_cluster: Any, make_topic: Callable[..., str], make_group: Callable[..., str]
) -> Callable[[str], Iterator[tuple[Consumer, str]]]:
    """A consumer holding 2 partitions, committed at 5 and 7, that has read past both."""

    def start(strategy: str) -> Iterator[tuple[Consumer, str]]:
        bs = kafka_cluster.bootstrap_servers
        topic = make_topic(2)
        producer = Producer({"bootstrap.servers": bs})
        for i in range(100):
            producer.produce(topic, str(i).encode(), partition=i % 2)
        assert producer.flush(30) == 0
        consumer = Consumer(
            {
                "bootstrap.servers": bs,
                "group.id": make_group(),
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "partition.assignment.strategy": strategy,
            }
        )
        consumer.subscribe([topic])
        read = {0: 0, 1: 0}  # past both commits below (one partition may come first)
        deadline = time.monotonic() + 60
        while min(read.values()) < 20 and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                read[message.partition()] += 1
        assert min(read.values()) >= 20
        consumer.commit(
            offsets=[TopicPartition(topic, 0, 5), TopicPartition(topic, 1, 7)], asynchronous=False
        )
        try:
            yield consumer, topic
        finally:
            consumer.close()

    return start


def _first_offsets(consumer: Consumer, partitions: int) -> dict[int, int]:
    first: dict[int, int] = {}
    deadline = time.monotonic() + 30
    while len(first) < partitions and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and not message.error():
            first.setdefault(message.partition(), message.offset())
    return first


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_reassign_puts_partitions_back_at_their_committed_offsets(
    read_past_committed: Callable[[str], Iterator[tuple[Consumer, str]]], strategy: str
) -> None:
    for consumer, topic in read_past_committed(strategy):
        reassign(consumer, [TopicPartition(topic, 0), TopicPartition(topic, 1)])
        assert sorted(tp.partition for tp in consumer.assignment()) == [0, 1]
        assert _first_offsets(consumer, 2) == {0: 5, 1: 7}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_reassign_of_one_partition_leaves_the_others_where_they_are(
    read_past_committed: Callable[[str], Iterator[tuple[Consumer, str]]],
    strategy: str,
    kafka_cluster: Any,
) -> None:
    bootstrap = kafka_cluster.bootstrap_servers
    for consumer, topic in read_past_committed(strategy):
        before = {tp.partition: tp.offset for tp in consumer.position(consumer.assignment())}
        assert before[1] > 7  # read past the commit
        reassign(consumer, [TopicPartition(topic, 0)])
        more = Producer({"bootstrap.servers": bootstrap})  # p1 may have been read to its end
        for _ in range(5):
            more.produce(topic, b"more", partition=1)
        assert more.flush(30) == 0
        assert _first_offsets(consumer, 2) == {0: 5, 1: before[1]}


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_rewind_whose_committed_call_keeps_timing_out_reassigns_instead_of_raising(
    read_past_committed: Callable[[str], Iterator[tuple[Consumer, str]]],
    strategy: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("sdk._client.RETRY_FOR_S", 0.0)
    for consumer, _topic in read_past_committed(strategy):
        stats = ProcessorStats()
        flaky = _CommittedTimesOut(consumer)
        rewind_to_committed(flaky, latest=False, stats=stats, timeout_s=0.5)  # type: ignore[arg-type]
        assert flaky.asked >= 1  # a local timeout is not retried: the call waited already
        assert stats.rewinds == 1
        assert any("reassigning 2" in event for event in stats.events)
        assert _first_offsets(consumer, 2) == {0: 5, 1: 7}


def test_a_rewind_refused_for_good_still_raises(
    read_past_committed: Callable[[str], Iterator[tuple[Consumer, str]]],
) -> None:
    for consumer, _topic in read_past_committed("range"):
        stats = ProcessorStats()
        refused = _CommittedTimesOut(consumer, KafkaError.GROUP_AUTHORIZATION_FAILED)
        with pytest.raises(KafkaClientError, match="committed"):
            rewind_to_committed(refused, latest=False, stats=stats, timeout_s=0.5)  # type: ignore[arg-type]
        assert stats.rewinds == 0


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_reassign_at_offsets_starts_each_partition_at_its_given_offset(
    read_past_committed: Callable[[str], Iterator[tuple[Consumer, str]]], strategy: str
) -> None:
    for consumer, topic in read_past_committed(strategy):
        reassign(
            consumer, [TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 9)], at_offsets=True
        )
        assert sorted(tp.partition for tp in consumer.assignment()) == [0, 1]
        assert _first_offsets(consumer, 2) == {0: 3, 1: 9}  # not the committed 5 and 7


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_a_sink_rewind_whose_seek_is_refused_reassigns_at_the_database_position(
    read_past_committed: Callable[[str], Iterator[tuple[Consumer, str]]], strategy: str
) -> None:
    for consumer, topic in read_past_committed(strategy):
        holdings = Holdings(eos=True, stats=SinkStats(), advice_every_s=5.0)
        holdings.positions = {(topic, 0): 2, (topic, 1): 11}  # the database's, not Kafka's
        refused = _SeekRefused(consumer)
        holdings.rewind(refused, [(topic, 0), (topic, 1)])  # type: ignore[arg-type]
        assert refused.refused == 2
        assert holdings.stats.rewinds == 2
        assert _first_offsets(consumer, 2) == {0: 2, 1: 11}
