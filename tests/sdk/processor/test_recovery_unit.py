"""Recovery paths that a healthy broker cannot be made to produce on demand, with fake clients.

Retriable errors, ambiguous (timed-out) commits and transaction timeouts are driven by fakes that
raise real ``confluent_kafka.KafkaError`` objects with librdkafka's flags.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from sdk.errors import ClosedError, ConfigurationError
from sdk.lifecycle import Lifecycle
from sdk.processor import OutputRecord, Processor
from sdk.profiles import ProcessingProfile
from sdk.testing.fakes import (
    FakeConsumerClient,
    FakeMessage,
    FakeProducerClient,
    FakeProducerFactory,
)
from tests.sdk.observability._support import make_otel

FakeProducer = FakeProducerFactory()
"""Makes the processor's producer clients; ``FakeProducer.instances`` holds every one made."""


def records(n: int) -> list[FakeMessage]:
    return [FakeMessage("in", 0, i, str(i).encode(), key=b"k") for i in range(n)]


def input_consumer(messages: list[FakeMessage], **options: Any) -> FakeConsumerClient:
    """The input: partition in[0] assigned, committed offset 0, logs as (partition, offset)."""
    return FakeConsumerClient(
        messages,
        assignment=[("in", 0)],
        group_offsets={("in", 0): 0},
        topic_in_logs=False,
        **options,
    )


def profile(**extra: Any) -> ProcessingProfile:
    return ProcessingProfile(
        guarantee="exactly_once",
        consumer={"guarantee": "exactly_once", "bootstrap_servers": "x:1", "group_id": "g"},
        producer={
            "guarantee": "exactly_once",
            "bootstrap_servers": "x:1",
            "transactional_id_prefix": "p-",
            **extra,
        },
        max_records_per_transaction=5,
    )


def make(
    script: dict[str, list[KafkaError]],
    n: int = 10,
    hooks: dict[str, Any] | None = None,
    **extra: Any,
) -> tuple[Processor, FakeConsumerClient]:
    FakeProducer.instances = []
    consumer = input_consumer(records(n))
    proc = Processor(
        profile(**extra),
        ["in"],
        instance_id="i1",
        producer_factory=lambda c: FakeProducer(c, failures=script, hooks=hooks),
        consumer_factory=lambda c: consumer,
    )
    return proc, consumer


def copy(r: Any) -> list[OutputRecord]:
    return [OutputRecord("out", r.value, r.key)]


def start(proc: Processor) -> None:
    """What run(copy) does before its loop, so a test can take the loop's steps itself."""
    proc._handling.use(copy, None)
    proc.state = Lifecycle.RUNNING
    proc._start()


def drive(proc: Processor, steps: int = 20) -> None:
    start(proc)
    for _ in range(steps):
        proc._step()
    proc._commits.commit_or_recover()


def committed_values() -> list[bytes]:
    return [v for p in FakeProducer.instances for v in p.committed]


def test_transactional_id_is_prefix_plus_instance_and_message_timeout_fits() -> None:
    proc, _ = make({})
    assert proc.transactional_id == "p-i1"
    config = proc._producer.config
    assert config["message.timeout.ms"] <= config["transaction.timeout.ms"]


def test_missing_instance_id_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError) as info:
        Processor(profile(), ["in"])
    assert info.value.field == "instance_id"


def test_retriable_commit_is_retried_with_the_same_producer() -> None:
    err = KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS, "loading", retriable=True)
    proc, _ = make({"commit_transaction": [err, err]})
    drive(proc)
    assert proc.stats.retries == 2 and proc.stats.producer_recreations == 0
    assert committed_values() == [str(i).encode() for i in range(10)]


def test_ambiguous_commit_recreates_the_producer_and_rewinds() -> None:
    err = KafkaError(KafkaError._TIMED_OUT, "commit timed out")
    proc, consumer = make({"commit_transaction": [err]})  # outcome unknown
    drive(proc)
    s = proc.stats
    assert s.ambiguous == 1 and s.producer_recreations == 1 and s.rewinds == 1
    assert consumer.seeks == [(0, 0)]
    assert len(FakeProducer.instances) == 2  # a new producer: init_transactions bumps the epoch
    assert FakeProducer.instances[1].calls[0] == "init_transactions"
    assert committed_values() == [str(i).encode() for i in range(10)]


def test_transaction_timeout_recreates(monkeypatch: pytest.MonkeyPatch) -> None:
    err = KafkaError(KafkaError.INVALID_PRODUCER_EPOCH, "epoch bumped", txn_requires_abort=True)
    proc, _ = make({"send_offsets_to_transaction": [err]}, transaction_timeout_ms=1000)
    import sdk.processor._processor as mod

    real = mod.time.monotonic
    monkeypatch.setattr(mod.time, "monotonic", lambda: real() + 5.0 * proc.stats.records_in)
    drive(proc)
    assert proc.stats.transaction_timeouts == 1 and proc.stats.producer_recreations == 1


def test_fatal_fenced_raises_with_policy_raise() -> None:
    from sdk.errors import ProducerFencedError

    err = KafkaError(KafkaError._FENCED, "fenced", fatal=True)
    proc, _ = make({"commit_transaction": [err]})
    with pytest.raises(ProducerFencedError):
        drive(proc)
    assert proc.stats.fenced == 1


def test_closed_processor_refuses_run() -> None:
    proc, _ = make({})
    proc.close()
    with pytest.raises(ClosedError):
        proc.run(copy)


def member_consumer(messages: list[FakeMessage], **options: Any) -> FakeConsumerClient:
    """The input, with a group member id; ``members_after_commit`` changes it at a commit."""
    return input_consumer(messages, member="m-1", **options)


def _at_most_once(consumer: FakeConsumerClient) -> Processor:
    FakeProducer.instances = []
    side = {"guarantee": "at_most_once", "bootstrap_servers": "x:1"}
    return Processor(
        ProcessingProfile(
            guarantee="at_most_once",
            consumer={**side, "group_id": "g", "batch_size": 4},
            producer=side,
        ),
        ["in"],
        producer_factory=FakeProducer,
        consumer_factory=lambda c: consumer,
    )


def test_at_most_once_batch_is_not_handled_when_the_session_is_lost_during_its_commit() -> None:
    consumer = member_consumer(records(8))
    consumer.members_after_commit = [None]
    proc = _at_most_once(consumer)
    start(proc)
    consumer.callbacks["on_assign"](consumer, [TopicPartition("in", 0)])
    proc._step()  # records 0-3: committed, but the member id was cleared meanwhile
    assert consumer.commits == [[(0, 4)]]
    assert FakeProducer.instances[0].pending == []  # not handled
    assert consumer.seeks == [(0, 0)]  # rewound: the owner (maybe us, after rejoining) rereads
    assert (proc.stats.commit_refused, proc.stats.records_in, proc.stats.commits) == (1, 0, 0)

    consumer.member = "m-2"  # rejoined; the new assignment arrives before any record
    consumer.callbacks["on_assign"](consumer, [TopicPartition("in", 0)])
    proc._step()
    proc._step()
    # The refused commit did land (the group's committed offset is 4), so records 0-3 count as
    # consumed: whoever owns the partition starts at 4, and a member that cannot tell whether
    # another one handled them must not (at-most-once loses them; before the check of the
    # committed offset at assignment this test expected them handled after the rejoin)
    assert consumer.commits[1:] == [[(0, 8)]]
    assert FakeProducer.instances[0].pending == [str(i).encode() for i in range(4, 8)]
    assert (proc.stats.commit_refused, proc.stats.records_in, proc.stats.redelivered) == (1, 4, 4)
    assert proc.committed == {("in", 0): 8}  # the refused commit is not reported


def test_at_most_once_sends_no_commit_without_a_group_session() -> None:
    consumer = member_consumer(records(1))
    proc = _at_most_once(consumer)
    start(proc)
    consumer.callbacks["on_assign"](consumer, [TopicPartition("in", 0)])
    consumer.member = None  # session timed out; lost not served yet
    proc._step()
    assert consumer.commits == [] and FakeProducer.instances[0].pending == []
    assert proc.stats.commit_refused == 1


def test_at_most_once_commit_refused_by_a_rebalance_is_not_raised() -> None:
    refused = KafkaError(KafkaError.ILLEGAL_GENERATION)
    consumer = member_consumer(records(1), failures={"commit": [refused]})
    proc = _at_most_once(consumer)
    start(proc)
    consumer.callbacks["on_assign"](consumer, [TopicPartition("in", 0)])
    proc._step()
    assert FakeProducer.instances[0].pending == [] and proc.stats.commit_refused == 1


def test_stuck_send_offsets_is_abandoned_and_a_new_epoch_redoes_the_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """librdkafka #5456: send_offsets_to_transaction ignoring its timeout must not freeze us."""
    import threading

    import sdk.producer._bounded as bounded
    import sdk.producer._transactions as calls

    monkeypatch.setattr(calls, "STALL_GRACE_S", 0.2)
    release = threading.Event()

    def hangs_once(client: FakeProducerClient, *args: Any) -> None:
        if client is FakeProducer.instances[0]:
            release.wait(30)  # the first producer's call never returns (until the test ends)

    proc, _ = make({}, hooks={"send_offsets_to_transaction": hangs_once})
    otel = make_otel()
    proc._txn.output.telemetry = otel.telemetry
    proc._txn.output.timeout_s = 0.2
    try:
        drive(proc)
        s = proc.stats
        assert (s.stalled_calls, s.ambiguous, s.producer_recreations, s.rewinds) == (1, 1, 1, 1)
        stuck = FakeProducer.instances[0]
        assert stuck in bounded.ABANDONED  # never destroyed while a call is blocked in it
        assert stuck.pending and stuck.committed == []  # not purged: a call is still inside
        assert committed_values() == [str(i).encode() for i in range(10)]
        assert any("librdkafka #5456" in e for e in s.events)
        key = {"kafka_semantics.safeguard": "stalled_call"}
        assert otel.total("kafka_semantics.safeguards", key) == 1
    finally:
        release.set()
        bounded.ABANDONED.clear()


def test_a_retriable_error_is_retried_for_a_while_not_just_five_quick_times(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A coordinator loading __consumer_offsets answers COORDINATOR_LOAD_IN_PROGRESS for seconds."""
    import time

    import sdk._client as calls
    from sdk.errors import KafkaClientError

    monkeypatch.setattr(calls, "RETRY_FOR_S", 1.5)
    attempts: list[float] = []

    def loading() -> None:
        attempts.append(time.monotonic())
        # as librdkafka returns it from a synchronous commit: without the retriable flag
        raise KafkaException(KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS))

    with pytest.raises(KafkaClientError) as info:
        calls.call_kafka(loading, context="commit")
    assert attempts[-1] - attempts[0] >= 1.5 and len(attempts) > 5
    assert "COORDINATOR_LOAD_IN_PROGRESS" in str(info.value)
    attempts.clear()
    with pytest.raises(KafkaClientError):  # attempts=1: no retry at all
        calls.call_kafka(loading, context="flush", attempts=1)
    assert len(attempts) == 1


def test_progress_hook_reports_assignment_and_committed_positions() -> None:
    """A supervisor learns the assignment and committed positions without asking the broker."""
    from sdk.processor import Progress

    seen: list[Progress] = []
    FakeProducer.instances = []
    consumer = input_consumer(records(10))
    proc = Processor(
        profile(),
        ["in"],
        instance_id="i1",
        producer_factory=FakeProducer,
        consumer_factory=lambda c: consumer,
        on_progress=seen.append,
    )
    start(proc)
    consumer.callbacks["on_assign"](consumer, [TopicPartition("in", 0)])
    for _ in range(5):
        proc._step()
    assert (seen[0].event, seen[0].assignment) == ("assigned", (("in", 0),))
    commits = [p.committed[("in", 0)] for p in seen if p.event == "committed"]
    assert commits == [5, 10]  # max_records_per_transaction=5
    assert proc.assignment == [("in", 0)] and proc.committed == {("in", 0): 10}
    assert seen[-1].records_in == 10
    consumer.callbacks["on_revoke"](consumer, [TopicPartition("in", 0)])
    assert (seen[-1].event, seen[-1].assignment, dict(seen[-1].committed)) == ("revoked", (), {})
    assert proc.committed == {}


def test_at_most_once_never_hands_out_a_record_delivered_again() -> None:
    """librdkafka delivered a handled batch again after a partition was lost and assigned back
    (the reliability pipeline's at_most_once duplicates): records below the position committed
    before handling are dropped, the rest of their batch is handled."""
    consumer = member_consumer(records(10))
    proc = _at_most_once(consumer)
    start(proc)
    consumer.callbacks["on_assign"](consumer, [TopicPartition("in", 0)])
    proc._step()
    proc._step()  # 0-7 committed and handled
    consumer.callbacks["on_lost"](consumer, [TopicPartition("in", 0)])
    consumer.callbacks["on_assign"](consumer, [TopicPartition("in", 0)])
    consumer.seek(TopicPartition("in", 0, 6))  # the client serves 6.. again
    proc._step()  # 6, 7 (again), 8, 9
    assert consumer.commits == [[(0, 4)], [(0, 8)], [(0, 10)]]
    assert FakeProducer.instances[0].pending == [str(i).encode() for i in range(10)]
    assert (proc.stats.redelivered, proc.stats.records_in, proc.stats.commits) == (2, 10, 3)
    consumer.seek(TopicPartition("in", 0, 0))
    proc._step()  # 0-3 again: nothing handled, nothing committed
    assert len(consumer.commits) == 3 and proc.stats.redelivered == 6
    assert proc.stats.records_in == 10


def test_at_most_once_hands_out_nothing_below_the_committed_offset_at_assignment() -> None:
    """Records fetched before this member's session was lost, delivered after the partition
    came back, which another member committed (and handled) meanwhile: the group's committed
    offset, read once per assignment, keeps them from being handled twice."""
    consumer = member_consumer(records(10))
    proc = _at_most_once(consumer)
    start(proc)
    consumer.callbacks["on_assign"](consumer, [TopicPartition("in", 0)])
    proc._step()  # 0-3 committed and handled
    consumer.callbacks["on_lost"](consumer, [TopicPartition("in", 0)])
    consumer.group_offsets[("in", 0)] = 8  # another member committed 4-7 and handled them
    consumer.callbacks["on_assign"](consumer, [TopicPartition("in", 0)])
    proc._step()  # the stale 4-7: dropped, nothing committed
    proc._step()  # 8, 9
    assert consumer.commits == [[(0, 4)], [(0, 10)]]
    assert FakeProducer.instances[0].pending == [str(i).encode() for i in (0, 1, 2, 3, 8, 9)]
    assert (proc.stats.redelivered, proc.stats.records_in) == (4, 6)
    assert consumer.calls.count("committed") == 2  # once per assignment


@pytest.mark.parametrize("metrics", [False, True], ids=["plain", "metrics-only"])
def test_each_output_is_counted_once_on_its_transaction(
    metrics: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hot loop's emitter counts outputs on the transaction span on every path: straight
    to librdkafka, and through the observed send when only metrics are on (tracing off)."""
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader

    from sdk.observability import Telemetry, TransactionSpan

    ended: list[tuple[int, int]] = []
    end = TransactionSpan.end

    def record_end(self: TransactionSpan, *args: Any, **kwargs: Any) -> None:
        ended.append((self.records, self.input_records))
        end(self, *args, **kwargs)

    monkeypatch.setattr(TransactionSpan, "end", record_end)
    FakeProducer.instances = []
    consumer = input_consumer(records(10))
    tel = Telemetry(meter_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]))
    proc = Processor(
        profile(),
        ["in"],
        instance_id="i1",
        producer_factory=lambda c: FakeProducer(c),
        consumer_factory=lambda c: consumer,
        telemetry=tel if metrics else False,
    )
    assert proc._tel.tracing_enabled() is False  # the hot loop runs
    drive(proc)
    assert proc._producer._slot.observed is metrics  # metrics only: the observed send path
    assert ended == [(5, 5), (5, 5)]


def test_the_handler_is_given_to_run() -> None:
    proc, _ = make({})
    stats = proc.run(copy, max_duration_s=0.5)
    assert stats.records_in == 10 and committed_values() == [str(i).encode() for i in range(10)]


def test_a_batch_handler_is_given_to_run_batch() -> None:
    proc, _ = make({})
    sizes: list[int] = []

    def batch(records: list[Any]) -> list[OutputRecord]:
        sizes.append(len(records))
        return [OutputRecord("out", r.value, r.key) for r in records]

    proc.run_batch(batch, max_duration_s=0.5)
    assert sum(sizes) == 10 and committed_values() == [str(i).encode() for i in range(10)]


def test_a_run_without_a_handler_is_refused() -> None:
    proc, _ = make({})
    with pytest.raises(ConfigurationError) as info:
        proc.run()
    assert info.value.field == "handler"


def test_the_constructor_handler_still_works_with_a_deprecation_warning() -> None:
    FakeProducer.instances = []
    consumer = input_consumer(records(10))
    with pytest.warns(DeprecationWarning, match="run"):
        proc = Processor(
            profile(),
            ["in"],
            copy,
            instance_id="i1",
            producer_factory=FakeProducer,
            consumer_factory=lambda c: consumer,
        )
    with pytest.raises(ConfigurationError) as info:
        proc.run(copy)  # one handler, in one place
    assert info.value.field == "handler"
    with pytest.warns(DeprecationWarning, match="max_duration_s"):
        proc.run(max_seconds=0.5)
    assert committed_values() == [str(i).encode() for i in range(10)]
