"""The one recovery decision (sdk.recovery.decide): the error's type decides first."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from sdk.errors import KafkaClientError, from_kafka_error
from sdk.recovery import Recovery, decide

TIMEOUT_MS = 10_000


def err(code: int, **flags: bool) -> KafkaClientError:
    return from_kafka_error(KafkaError(code, "x", **flags), context="t", transactional=True)


AMBIGUOUS = err(KafkaError._TIMED_OUT, retriable=True)
FENCED = err(KafkaError._FENCED, fatal=True)
EPOCH_BUMPED = err(KafkaError.INVALID_PRODUCER_EPOCH, txn_requires_abort=True)
ABORTABLE = err(KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER, txn_requires_abort=True)


@pytest.mark.parametrize(
    ("error", "age_ms", "in_a_row", "expected"),
    [
        # an ambiguous outcome stays ambiguous however old the transaction (it was counted as
        # a transaction timeout before: the age was checked first)
        (AMBIGUOUS, 0, 1, Recovery.AMBIGUOUS),
        (AMBIGUOUS, 2 * TIMEOUT_MS, 1, Recovery.AMBIGUOUS),
        (AMBIGUOUS, 0, 3, Recovery.AMBIGUOUS),
        # a fence of a young transaction is another instance's; of an old one, the timeout's
        (FENCED, 0, 1, Recovery.FENCED),
        (FENCED, 2 * TIMEOUT_MS, 1, Recovery.FENCED_TIMED_OUT),
        # abortable: the age tells a timeout; a second failure in a row gets a new epoch
        (EPOCH_BUMPED, 2 * TIMEOUT_MS, 1, Recovery.TIMED_OUT),
        (ABORTABLE, 0, 2, Recovery.REPEATED),
        (ABORTABLE, 0, 1, Recovery.ABORT),
        (EPOCH_BUMPED, 0, 1, Recovery.ABORT),
    ],
)
def test_decide(error: KafkaClientError, age_ms: float, in_a_row: int, expected: Recovery) -> None:
    got = decide(
        error,
        transaction_age_ms=age_ms,
        transaction_timeout_ms=TIMEOUT_MS,
        failures_in_a_row=in_a_row,
    )
    assert got is expected
    assert got.recreates is (expected is not Recovery.ABORT)


def test_the_classes_the_table_relies_on() -> None:
    from sdk.errors import AmbiguousTransactionError, ProducerFencedError

    assert isinstance(AMBIGUOUS, AmbiguousTransactionError)
    assert isinstance(FENCED, ProducerFencedError) and FENCED.fatal
    assert EPOCH_BUMPED.txn_requires_abort and not EPOCH_BUMPED.fatal
