"""Commit error paths that a real broker cannot produce on demand, with a scripted client.

Everything a broker can show deterministically is tested on the broker (test_ordering.py);
this file covers only the race where a rebalance refuses at_most_once's pre-handling commit,
the group session lost around that commit (``memberid()`` cleared, see
sdk/consumer/_at_most_once.py) and a store for a partition that is no longer assigned.
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from sdk.consumer import Consumer, ConsumerRecord
from sdk.errors import AuthorizationError, CommitError
from sdk.profiles import ConsumerProfile
from sdk.testing.fakes import FakeConsumerClient, FakeMessage


def message(topic: str, partition: int, offset: int) -> FakeMessage:
    return FakeMessage(topic, partition, offset, str(offset).encode(), key=b"k")


def scripted(
    batches: list[list[FakeMessage]], commit_errors: list[int], store_errors: list[int]
) -> FakeConsumerClient:
    """Returns the scripted batches; commit/store raise the scripted errors once each.

    Joins at once as member ``member-1``, assigned the partitions the batches serve (at_most_once
    hands out only records of assigned partitions).
    """
    return FakeConsumerClient(
        batches=batches,
        failures={"commit": commit_errors, "store_offsets": store_errors},
        assign_on_subscribe=sorted({(m.topic(), m.partition()) for b in batches for m in b}),
    )


def _consumer(guarantee: str, client: FakeConsumerClient) -> Consumer:
    profile = ConsumerProfile(guarantee=guarantee, bootstrap_servers="unused:1", group_id="g")
    return Consumer(profile, ["t"], client_factory=lambda cfg: client)


def test_rebalance_refusing_the_pre_handling_commit_rewinds_and_handles_nothing() -> None:
    batch = [message("t", 0, 10), message("t", 0, 11), message("t", 1, 4)]
    client = scripted([batch, batch], [KafkaError.ILLEGAL_GENERATION], [])
    seen: list[int] = []
    with _consumer("at_most_once", client) as consumer:
        stats = consumer.run(lambda r: seen.append(r.offset), max_records=3, idle_timeout_s=0.1)
    assert client.seeks == [("t", 0, 10), ("t", 1, 4)]  # back to the batch's first offsets
    assert client.commits == [[("t", 0, 12), ("t", 1, 5)]]  # the second attempt committed
    assert seen == [10, 11, 4]  # handled once, after the successful commit
    assert (stats.commit_refused, stats.commits, stats.abandoned) == (1, 1, 0)


def test_session_lost_during_the_commit_handles_nothing() -> None:
    """The commit may have gone out without a member id (accepted while the group was empty)."""
    batch = [message("t", 0, 10), message("t", 0, 11)]
    client = scripted([batch], [], [])
    client.members_after_commit = [None]  # librdkafka's session timed out meanwhile
    seen: list[int] = []
    with _consumer("at_most_once", client) as consumer:
        stats = consumer.run(lambda r: seen.append(r.offset), idle_timeout_s=0.2)
    assert client.commits == [[("t", 0, 12)]]
    assert seen == []  # another member may own partition 0 and start from the older offset
    assert client.seeks == [("t", 0, 10)]
    assert (stats.commit_refused, stats.commits) == (1, 0)
    assert any("group session lost" in e for e in stats.errors)


def test_an_unowned_batch_is_a_safeguard_metric() -> None:
    from tests.sdk.observability._support import make_otel

    otel = make_otel()
    client = scripted([[message("t", 0, 10)]], [], [])
    client.members_after_commit = [None]
    profile = ConsumerProfile(guarantee="at_most_once", bootstrap_servers="unused:1", group_id="g")
    consumer = Consumer(profile, ["t"], client_factory=lambda cfg: client, telemetry=otel.telemetry)
    with consumer:
        consumer.run(lambda r: None, idle_timeout_s=0.2)
    key = {"kafka_semantics.safeguard": "unowned_batch"}
    assert otel.total("kafka_semantics.safeguards", key) == 1


def test_no_group_session_sends_no_commit_and_handles_nothing() -> None:
    client = scripted([[message("t", 0, 3)]], [], [])
    seen: list[int] = []
    with _consumer("at_most_once", client) as consumer:
        client.member = None  # session timed out after the assignment, lost not served yet
        stats = consumer.run(lambda r: seen.append(r.offset), idle_timeout_s=0.2)
    assert (client.commits, seen, stats.commit_refused) == ([], [], 1)


def test_a_new_member_id_after_a_new_assignment_is_the_owner() -> None:
    client = scripted([[message("t", 0, 3)]], [], [])
    client.member = "member-2"  # rejoined before this assignment: on_assign saw member-2
    seen: list[int] = []
    with _consumer("at_most_once", client) as consumer:
        stats = consumer.run(lambda r: seen.append(r.offset), max_records=1, idle_timeout_s=0.2)
    assert (seen, stats.commits, stats.commit_refused) == ([3], 1, 0)


def test_other_commit_errors_raise_and_nothing_is_handled() -> None:
    client = scripted([[message("t", 0, 0)]], [KafkaError.GROUP_AUTHORIZATION_FAILED], [])
    seen: list[ConsumerRecord] = []
    with _consumer("at_most_once", client) as consumer, pytest.raises(AuthorizationError) as info:
        consumer.run(seen.append, idle_timeout_s=0.1)
    assert "commit before handling" in str(info.value) and seen == []


def test_store_for_an_unassigned_partition_is_noted_not_raised() -> None:
    # two polled batches: a fast handler's offsets are stored once per batch, so
    # the refused store of the first and the kept store of the second are two calls
    client = scripted([[message("t", 0, 0)], [message("t", 0, 1)]], [], [KafkaError._STATE])
    with _consumer("at_least_once", client) as consumer:
        stats = consumer.run(lambda r: None, max_records=2, idle_timeout_s=0.1)
    assert client.stored == [("t", 0, 2)]  # the first store was refused, the second kept
    assert stats.stored == 1 and any("store_offsets" in e for e in stats.errors)


def test_a_failed_store_is_a_commit_error() -> None:
    client = scripted([[message("t", 0, 0)]], [], [KafkaError._INVALID_ARG])
    with _consumer("at_least_once", client) as consumer, pytest.raises(CommitError):
        consumer.run(lambda r: None, idle_timeout_s=0.1)


def test_a_retriable_commit_error_is_retried_for_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    import sdk._client as kafka

    monkeypatch.setattr(kafka, "RETRY_FOR_S", 3.0)  # five attempts take 1.5 s of backoff
    attempts: list[float] = []

    def loading() -> None:
        attempts.append(time.monotonic())
        # as librdkafka returns it from a synchronous commit: without the retriable flag
        raise KafkaException(KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS))

    with pytest.raises(CommitError):
        kafka.call_kafka(loading, context="commit", commit=True)
    assert attempts[-1] - attempts[0] >= 3.0 and len(attempts) > 5


@pytest.mark.parametrize("code", [KafkaError.STALE_MEMBER_EPOCH, KafkaError.FENCED_MEMBER_EPOCH])
def test_kip848_epoch_refusals_are_rebalances_too(code: int) -> None:
    """Under KIP-848 the member id survives a fenced epoch; the broker's refusal tells."""
    batch = [message("t", 0, 7)]
    client = scripted([batch], [code], [])
    seen: list[int] = []
    with _consumer("at_most_once", client) as consumer:
        stats = consumer.run(lambda r: seen.append(r.offset), idle_timeout_s=0.2)
    assert (seen, stats.commit_refused, client.seeks) == ([], 1, [("t", 0, 7)])


def test_at_most_once_drops_records_delivered_again_below_the_committed_position() -> None:
    """The client served a committed-and-handled batch again (seen with librdkafka after a
    partition was lost and assigned back): those records are not handed out twice."""
    first = [message("t", 0, 10), message("t", 0, 11)]
    again = [message("t", 0, 10), message("t", 0, 11), message("t", 0, 12)]
    client = scripted([first, again], [], [])
    seen: list[int] = []
    with _consumer("at_most_once", client) as consumer:
        stats = consumer.run(lambda r: seen.append(r.offset), max_records=3, idle_timeout_s=0.1)
    assert seen == [10, 11, 12]
    assert client.commits == [[("t", 0, 12)], [("t", 0, 13)]]
    assert (stats.redelivered, stats.commits) == (2, 2)
    assert any("delivered again" in e for e in stats.errors)


def test_at_most_once_hands_out_nothing_below_the_committed_offset_at_assignment() -> None:
    """A stale delivery after the partition came back: records fetched before this member's
    session was lost, which another member committed (and handled) meanwhile. Its own marks
    cannot see them; the group's committed offset, read once per assignment, does."""
    stale = [message("t", 0, 10), message("t", 0, 11), message("t", 0, 12), message("t", 0, 13)]
    client = FakeConsumerClient(
        batches=[stale],
        assign_on_subscribe=[("t", 0)],
        group_offsets={("t", 0): 12},  # another member committed 10 and 11 before handling
    )
    seen: list[int] = []
    with _consumer("at_most_once", client) as consumer:
        stats = consumer.run(lambda r: seen.append(r.offset), max_records=2, idle_timeout_s=0.1)
    assert seen == [12, 13]
    assert client.commits == [[("t", 0, 14)]]
    assert (stats.redelivered, stats.commits) == (2, 1)
    assert client.calls.count("committed") == 1  # once per assignment, not per batch


def test_at_most_once_without_the_committed_offset_refuses_the_batch() -> None:
    """If the committed offsets of a new assignment cannot be read, the batch is not handled
    unchecked: it is rewound and read again, and checked then."""
    batch = [message("t", 0, 10), message("t", 0, 11)]
    client = FakeConsumerClient(
        batches=[batch, batch],
        assign_on_subscribe=[("t", 0)],
        failures={"committed": [KafkaError.GROUP_AUTHORIZATION_FAILED]},
    )
    seen: list[int] = []
    with _consumer("at_most_once", client) as consumer:
        stats = consumer.run(lambda r: seen.append(r.offset), max_records=2, idle_timeout_s=0.1)
    assert seen == [10, 11]  # handled once, after the second check succeeded
    assert client.seeks == [("t", 0, 10)]
    assert client.commits == [[("t", 0, 12)]]
    assert (stats.commit_refused, stats.commits) == (1, 1)
    assert any("committed offsets of newly assigned partitions" in e for e in stats.errors)


def test_at_most_once_hands_out_no_record_of_a_partition_it_does_not_own() -> None:
    """A record of a partition not assigned to this member (a stale fetch after a rebalance)
    is not committed for it nor handled: the group coordinator would accept the commit from
    any member of the current generation, and the owner handles the record itself."""
    batch = [message("t", 1, 7), message("t", 0, 3), message("t", 0, 4)]
    client = FakeConsumerClient(batches=[batch], assign_on_subscribe=[("t", 0)])
    seen: list[tuple[int, int]] = []
    with _consumer("at_most_once", client) as consumer:
        stats = consumer.run(
            lambda r: seen.append((r.partition, r.offset)), max_records=2, idle_timeout_s=0.1
        )
    assert seen == [(0, 3), (0, 4)]
    assert client.commits == [[("t", 0, 5)]]
    assert stats.redelivered == 1
