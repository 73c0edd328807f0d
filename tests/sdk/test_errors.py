"""sdk.errors.from_kafka_error: the one boundary from librdkafka's codes to the SDK's tree."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError

from sdk import errors
from sdk.errors import from_kafka_error, is_transient


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (KafkaError._AUTHENTICATION, errors.AuthenticationError),
        (KafkaError.SASL_AUTHENTICATION_FAILED, errors.AuthenticationError),
        (KafkaError.TOPIC_AUTHORIZATION_FAILED, errors.AuthorizationError),
        (KafkaError.GROUP_AUTHORIZATION_FAILED, errors.AuthorizationError),
        (KafkaError.CLUSTER_AUTHORIZATION_FAILED, errors.AuthorizationError),
        (KafkaError._TRANSPORT, errors.BrokerUnreachableError),
        (KafkaError._ALL_BROKERS_DOWN, errors.BrokerUnreachableError),
        (KafkaError._MSG_TIMED_OUT, errors.KafkaTimeoutError),
        (KafkaError.UNKNOWN_TOPIC_OR_PART, errors.UnknownTopicError),
        (KafkaError.MSG_SIZE_TOO_LARGE, errors.RecordTooLargeError),
        (KafkaError.PRODUCER_FENCED, errors.ProducerFencedError),
        (KafkaError.NOT_LEADER_FOR_PARTITION, errors.KafkaClientError),
    ],
)
def test_codes_map_to_the_most_specific_class(code: int, expected: type) -> None:
    error = from_kafka_error(KafkaError(code), context="op", record="r")
    assert type(error) is expected
    assert str(error).startswith("op: ")
    assert error.code == code and error.record == "r"


def test_timeouts_in_a_transaction_are_ambiguous() -> None:
    error = from_kafka_error(
        KafkaError(KafkaError._TIMED_OUT), context="commit", transactional=True
    )
    assert type(error) is errors.AmbiguousTransactionError


def test_every_class_in_all_is_an_sdk_error() -> None:
    for name in errors.__all__:
        obj = getattr(errors, name)
        if isinstance(obj, type):
            assert issubclass(obj, errors.SdkError), name


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        (KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS), True),  # unflagged from commit()
        (KafkaError(KafkaError.NOT_COORDINATOR), True),
        (KafkaError(KafkaError._WAIT_COORD), True),
        (KafkaError(KafkaError.LEADER_NOT_AVAILABLE, retriable=True), True),
        (KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS, fatal=True), False),
        (KafkaError(KafkaError.NOT_COORDINATOR, txn_requires_abort=True), False),
        (KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED), False),
        (KafkaError(KafkaError.ILLEGAL_GENERATION), False),
        ("not a KafkaError", False),
    ],
)
def test_is_transient(error: object, transient: bool) -> None:
    assert is_transient(error) is transient


HARNESS_ERRORS = [
    "BrokerStartError",
    "ClusterError",
    "JavaNotFoundError",
    "MavenError",
    "PortInUseError",
]


@pytest.mark.parametrize("name", HARNESS_ERRORS)
def test_the_harness_errors_live_in_sdk_testing_under_the_one_root(name: str) -> None:
    from sdk import testing
    from sdk.testing import errors as testing_errors

    cls = getattr(testing, name)
    assert cls is getattr(testing_errors, name)
    assert cls.__module__ == "sdk.testing.errors"
    assert issubclass(cls, errors.SdkError)
    assert name not in errors.__all__


@pytest.mark.parametrize("name", HARNESS_ERRORS)
def test_the_harness_errors_old_place_warns_with_the_new_place_and_the_removal(name: str) -> None:
    from sdk import testing

    with pytest.warns(
        DeprecationWarning, match=rf"sdk\.errors\.{name} .*removed in 0\.3.*sdk\.testing"
    ):
        old = getattr(errors, name)
    assert old is getattr(testing, name)
    with pytest.warns(DeprecationWarning):
        from sdk.errors import MavenError  # noqa: F401  the old import still works


def test_an_unknown_name_of_sdk_errors_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchError"):
        errors.NoSuchError  # noqa: B018
