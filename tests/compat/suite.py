"""The compatibility suite: which existing tests prove which feature on one broker.

A row of docs/compatibility.md is a feature; its cell on a broker is the outcome of these tests
run against that broker alone (pass: every test passed; fail: one failed or errored; skip:
every test skipped, e.g. the queue on a broker without share groups). The selection keeps one
broker's run to a few minutes: the guarantee tests of each front end on one node, one kill test
per exactly-once path, not the whole suite (``./dev.sh test``, about 38 minutes, runs on the
default broker).
"""

from __future__ import annotations

__all__ = ["FEATURES", "node_ids"]

FEATURES: dict[str, tuple[str, ...]] = {
    "Producer: at-least-once, transactions": ("tests/sdk/producer/test_producer.py",),
    "Consumer: at-most-once, at-least-once (rebalance)": ("tests/sdk/consumer/test_rebalance.py",),
    "Processor: exactly-once in process (abort, fencing, DLQ)": (
        "tests/sdk/processor/test_inprocess.py::test_copy_exactly_once",
        "tests/sdk/processor/test_inprocess.py::test_abortable_error_aborts_rewinds_and_continues",
        "tests/sdk/processor/test_inprocess.py::test_fenced_producer",
        "tests/sdk/processor/test_inprocess.py::"
        "test_handler_failure_dead_letters_inside_the_transaction",
        "tests/sdk/processor/test_inprocess.py::test_other_guarantees_same_api",
    ),
    "exactly_once kill test (SIGKILLs, rebalances)": (
        "tests/sdk/processor/test_crash_copy.py::"
        "test_exactly_once_copy_survives_kills_and_rebalances",
    ),
    "asyncio: AsyncProducer, AsyncConsumer": (
        "tests/sdk/aio/test_async_producer.py",
        "tests/sdk/aio/test_async_consumer.py",
    ),
    "queue (share groups)": ("tests/sdk/queue/test_queue_consumer.py",),
    "database sink (SQLite, exactly-once)": ("tests/sdk/sink/test_sink_sqlite.py",),
    "doctor": (
        "tests/sdk/doctor/test_doctor_broker.py::"
        "test_replication_one_under_at_least_once_warns_and_names_the_risk",
        "tests/sdk/doctor/test_doctor_broker.py::"
        "test_a_transaction_timeout_above_the_broker_maximum_fails",
        "tests/sdk/doctor/test_doctor_broker.py::"
        "test_the_processor_refuses_to_start_on_a_failing_cluster",
    ),
    "queue: refused by name where missing": (
        "tests/compat/test_gaps.py::"
        "test_a_queue_runs_where_the_broker_has_share_groups_and_is_refused_where_not",
    ),
    'group_protocol="consumer": refused by name where missing': (
        "tests/compat/test_gaps.py::"
        "test_the_consumer_group_protocol_runs_from_kafka_4_and_is_refused_before",
    ),
    "doctor: FAIL for each gap, PASS otherwise": (
        "tests/compat/test_gaps.py::"
        "test_the_doctor_fails_what_the_broker_lacks_and_passes_what_it_has",
    ),
    'Processor, group_protocol="consumer": refused by name where missing': (
        "tests/compat/test_gaps.py::"
        "test_a_processor_with_the_consumer_group_protocol_runs_from_kafka_4_and_is_refused_before",
    ),
    "transactions: refused by name where the transaction log cannot be created": (
        "tests/compat/test_gaps.py::"
        "test_transactions_on_a_broker_that_refuses_them_are_refused_by_name",
    ),
}
"""Feature -> the tests (files or node ids) that prove it on one broker."""


def node_ids() -> list[str]:
    """Every test path of the suite, in order, each once."""
    return list(dict.fromkeys(path for paths in FEATURES.values() for path in paths))
