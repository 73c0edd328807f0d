"""The exception tree of kafka-semantics.

Every error the SDK raises derives from :class:`SdkError`, so ``except SdkError`` catches all of
them. Errors that come from librdkafka keep the original ``KafkaError`` (see
:class:`KafkaClientError`) and are translated in exactly one place, :func:`from_kafka_error`.

::

    SdkError
    ├── ConfigurationError            bad profile or option; names the offending field
    ├── ClosedError                   a client was used after close()
    ├── SerializationError            a serializer/deserializer failed; keeps the record
    ├── SchemaRegistryUnavailableError  the schema registry is unreachable / 5xx (transient)
    ├── HandlerError                  the user's handler failed after every retry
    ├── KafkaClientError              wraps a confluent_kafka.KafkaError (.code, .retriable, ...)
    │   ├── KafkaTimeoutError         an operation did not finish in time (outcome unknown)
    │   ├── BrokerUnreachableError    no broker answered
    │   ├── UnknownTopicError         the topic or partition does not exist
    │   ├── RecordTooLargeError       the record is over message.max.bytes / max.message.bytes
    │   ├── AuthorizationError        the principal lacks an ACL
    │   ├── AuthenticationError       the broker refused the credentials (SASL / TLS)
    │   ├── DeliveryError             a produced record was not acknowledged; keeps the record
    │   ├── CommitError               an offset commit failed
    │   └── TransactionError          a transactional call failed
    │       ├── TransactionAbortableError   abort the transaction, rewind, continue
    │       ├── ProducerFencedError         a newer instance owns the transactional.id (fatal)
    │       └── AmbiguousTransactionError   commit/abort outcome unknown: recreate the producer
    ├── DatabaseError                 a database call of the sink failed; keeps the driver's error
    │   └── DatabaseUnavailableError  the database refused or lost the connection (retried)
    ├── DoctorError                   the cluster cannot keep the guarantee (sdk.doctor FAIL)
    └── ClusterError                  the test harness failed (in sdk.testing.errors)

The test harness's errors (``ClusterError``, ``JavaNotFoundError``, ``MavenError``,
``PortInUseError``, ``BrokerStartError``) are :mod:`sdk.testing.errors`; importing them from
here is deprecated and removed in 0.3.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from confluent_kafka import KafkaError

__all__ = [
    "RETRY_FOR_S",
    "AcknowledgementError",
    "AmbiguousTransactionError",
    "AuthenticationError",
    "AuthorizationError",
    "BrokerUnreachableError",
    "ClosedError",
    "CommitError",
    "ConfigurationError",
    "DatabaseError",
    "DatabaseUnavailableError",
    "DeliveryError",
    "DoctorError",
    "HandlerError",
    "KafkaClientError",
    "KafkaTimeoutError",
    "ProducerFencedError",
    "RecordTooLargeError",
    "SchemaRegistryUnavailableError",
    "SdkError",
    "SerializationError",
    "TransactionAbortableError",
    "TransactionError",
    "UnknownTopicError",
    "from_kafka_error",
    "is_transient",
]


class SdkError(Exception):
    """Root of every error raised by kafka-semantics."""


class ConfigurationError(SdkError):
    """A profile or option is invalid or contradicts the chosen guarantee.

    Attributes:
        field: Dotted name of the offending field or librdkafka key, when one is to blame.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class ClosedError(SdkError):
    """A client was used after ``close()``."""


class AcknowledgementError(SdkError):
    """A queue record was acknowledged twice, or is no longer held by this consumer.

    A share group takes one acknowledgement per delivery of a record; a second one, or one
    for a record of an earlier poll (already released), would be refused by the broker or, worse,
    land on a later delivery of the record to this member.

    Attributes:
        record: The record the acknowledgement was for.
    """

    def __init__(self, message: str, *, record: Any = None) -> None:
        super().__init__(message)
        self.record = record


class SerializationError(SdkError):
    """A key/value serializer or deserializer failed.

    Attributes:
        record: The record (or message) that could not be (de)serialized; nothing is lost.
    """

    def __init__(self, message: str, *, record: Any = None) -> None:
        super().__init__(message)
        self.record = record


class SchemaRegistryUnavailableError(SdkError):
    """The schema registry did not answer (unreachable, timed out, 5xx, or refused the credentials).

    Not the record's fault, so never a poison record: a consumer retries the same record with
    backoff and, once its ``registry_timeout_s`` has passed, stops with this error; nothing of
    that record or after it is committed or dead-lettered. A producer raises it from
    ``send()`` (the record is not queued; send it again later).

    Attributes:
        record: The record (or ``confluent_kafka.Message``) that was being (de)serialized.
        url: The registry's URL.
        waited_s: How long a consumer retried before giving up (0 when it did not wait).
    """

    def __init__(
        self, message: str, *, record: Any = None, url: str = "", waited_s: float = 0.0
    ) -> None:
        super().__init__(message)
        self.record = record
        self.url = url
        self.waited_s = waited_s


class HandlerError(SdkError):
    """The user's handler failed on a record after every configured attempt.

    Attributes:
        record: The record the handler failed on.
        attempts: How many times the handler ran.
    """

    def __init__(self, message: str, *, record: Any = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.record = record
        self.attempts = attempts


class KafkaClientError(SdkError):
    """An error reported by librdkafka, with the original ``KafkaError`` kept.

    Attributes:
        kafka_error: The original ``confluent_kafka.KafkaError`` (or None if there was none).
        code: The librdkafka error code (``KafkaError.code()``), or None.
        retriable: Whether retrying the same operation may succeed.
        fatal: Whether the client instance is unusable and must be recreated.
        txn_requires_abort: Whether the current transaction must be aborted.
        record: The record concerned, if any: the caller still holds it.
    """

    def __init__(
        self,
        message: str,
        *,
        kafka_error: KafkaError | None = None,
        record: Any = None,
    ) -> None:
        super().__init__(message)
        self.kafka_error = kafka_error
        self.record = record
        self.code: int | None = _call(kafka_error, "code")
        self.retriable: bool = bool(_call(kafka_error, "retriable"))
        self.fatal: bool = bool(_call(kafka_error, "fatal"))
        self.txn_requires_abort: bool = bool(_call(kafka_error, "txn_requires_abort"))


class KafkaTimeoutError(KafkaClientError):
    """An operation did not complete in time; its outcome is unknown."""


class BrokerUnreachableError(KafkaClientError):
    """No broker of the bootstrap list could be reached."""


class UnknownTopicError(KafkaClientError):
    """The topic or partition does not exist (and was not auto-created)."""


class RecordTooLargeError(KafkaClientError):
    """The record exceeds the producer's or the topic's size limit."""


class AuthorizationError(KafkaClientError):
    """The principal is not authorized for the operation (missing ACL)."""


class AuthenticationError(KafkaClientError):
    """The broker refused the client's credentials (SASL user/password, TLS certificate)."""


class DeliveryError(KafkaClientError):
    """Produced records were not acknowledged by the broker (raised by ``flush()``/``close()``).

    Attributes:
        failures: One translated error per failed record, each with ``.record`` set, so the
            caller still holds every record that did not make it.
    """

    def __init__(
        self,
        message: str,
        *,
        kafka_error: KafkaError | None = None,
        record: Any = None,
        failures: list[KafkaClientError] | None = None,
    ) -> None:
        super().__init__(message, kafka_error=kafka_error, record=record)
        self.failures: list[KafkaClientError] = list(failures or [])


class CommitError(KafkaClientError):
    """An offset commit failed."""


class TransactionError(KafkaClientError):
    """A transactional producer call failed."""


class TransactionAbortableError(TransactionError):
    """The transaction must be aborted; the producer stays usable after the abort.

    ``txn_requires_abort`` is always True here, also when the underlying error is a record's
    delivery failure (e.g. MSG_SIZE_TOO_LARGE) that librdkafka itself does not flag.
    """

    def __init__(
        self, message: str, *, kafka_error: KafkaError | None = None, record: Any = None
    ) -> None:
        super().__init__(message, kafka_error=kafka_error, record=record)
        self.txn_requires_abort = True


class ProducerFencedError(TransactionError):
    """Another producer with the same ``transactional.id`` fenced this one; it is unusable."""


class AmbiguousTransactionError(TransactionError):
    """A commit or abort ended without a known outcome (e.g. a timeout).

    The producer must be recreated so that ``init_transactions()`` bumps the epoch and fences
    any request of the old one still in flight.
    """


class DatabaseError(SdkError):
    """A database call of :mod:`sdk.sink` failed; ``__cause__`` is the driver's exception."""


class DatabaseUnavailableError(DatabaseError):
    """The database refused the connection or lost it (retried with backoff first).

    No offset advanced for the batch in hand: its transaction was rolled back or never
    reached the database, and the sink re-reads its positions before going on.
    """


class DoctorError(SdkError):
    """The cluster failed a check of :mod:`sdk.doctor`: it cannot keep the profile's guarantee.

    Raised by ``sdk.doctor.verify`` and by the clients' ``verify_cluster=True`` before they
    connect; the message names each failing check, what it found and the fix.

    Attributes:
        report: The whole ``sdk.doctor.Report`` (warnings and passes too).
        checks: The names of the failing checks.
    """

    def __init__(self, message: str, *, report: Any = None, checks: list[str] | None = None):
        super().__init__(message)
        self.report = report
        self.checks: list[str] = list(checks or [])


def _call(obj: object, name: str) -> Any:
    method = getattr(obj, name, None)
    return method() if callable(method) else None


RETRY_FOR_S = 15.0
"""A transient error is retried for at least this long (and at least the caller's number of
attempts): a group coordinator loading ``__consumer_offsets`` after a broker bounce answers
COORDINATOR_LOAD_IN_PROGRESS for seconds, longer than five quick attempts last."""


def is_transient(kafka_error: object) -> bool:
    """Whether retrying the same call may succeed.

    True for librdkafka's ``retriable()`` flag or a coordinator/timeout code, unless the error
    is fatal or requires a transaction abort. librdkafka does not flag every transient error:
    a synchronous ``commit()`` refused with COORDINATOR_LOAD_IN_PROGRESS (a group coordinator
    still loading ``__consumer_offsets`` after a broker bounce) has ``retriable() == False``,
    and a processor that trusted the flag would crash on it.

    Args:
        kafka_error: A ``confluent_kafka.KafkaError`` (anything else is not transient).

    Returns:
        True if the same call is worth retrying.
    """
    from confluent_kafka import KafkaError

    if _call(kafka_error, "fatal") or _call(kafka_error, "txn_requires_abort"):
        return False
    if _call(kafka_error, "retriable"):
        return True
    return _call(kafka_error, "code") in (
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NETWORK_EXCEPTION,
        KafkaError._WAIT_COORD,
    )


def from_kafka_error(
    kafka_error: KafkaError | None,
    *,
    context: str,
    record: Any = None,
    transactional: bool = False,
    commit: bool = False,
    abortable: bool = False,
) -> KafkaClientError:
    """Translate a ``confluent_kafka.KafkaError`` into the SDK's tree (the one boundary).

    Args:
        kafka_error: The ``KafkaError`` (e.g. ``exc.args[0]`` of a ``KafkaException``).
        context: What the SDK was doing, e.g. ``"commit_transaction"``; starts the message.
        record: The record concerned, kept on the error so the caller still holds it.
        transactional: Whether the error came from a transactional call.
        commit: Whether the call committed or stored offsets: an error with no more specific
            class is a :class:`CommitError`.
        abortable: Whether the call produced inside a transaction: an error that is neither
            fenced nor fatal is a :class:`TransactionAbortableError` (librdkafka refuses
            ``produce()`` with ``_STATE`` once a delivery in the transaction failed, without
            setting ``txn_requires_abort``).

    Returns:
        The most specific :class:`KafkaClientError` subclass for the error.
    """
    from confluent_kafka import KafkaError

    code = _call(kafka_error, "code")
    text = _call(kafka_error, "str") or str(kafka_error)
    name = _call(kafka_error, "name") or str(code)
    message = f"{context}: {text} ({name})"
    cls: type[KafkaClientError] = KafkaClientError
    if code in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH):
        cls = ProducerFencedError
    elif (transactional and _call(kafka_error, "txn_requires_abort")) or (
        abortable and not _call(kafka_error, "fatal")
    ):
        cls = TransactionAbortableError
    elif code in (KafkaError._TIMED_OUT, KafkaError.REQUEST_TIMED_OUT, KafkaError._MSG_TIMED_OUT):
        cls = AmbiguousTransactionError if transactional else KafkaTimeoutError
    elif code in (KafkaError._ALL_BROKERS_DOWN, KafkaError._TRANSPORT, KafkaError._RESOLVE):
        cls = BrokerUnreachableError
    elif code in (
        KafkaError._UNKNOWN_TOPIC,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError._UNKNOWN_PARTITION,
    ):
        cls = UnknownTopicError
    elif code in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.INVALID_MSG_SIZE):
        cls = RecordTooLargeError
    elif code in (
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
        KafkaError.GROUP_AUTHORIZATION_FAILED,
        KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ):
        cls = AuthorizationError
    elif code in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED):
        cls = AuthenticationError
    elif transactional:
        cls = TransactionError
    elif commit:
        cls = CommitError
    return cls(message, kafka_error=kafka_error, record=record)


_MOVED_TO_TESTING = frozenset(
    {"BrokerStartError", "ClusterError", "JavaNotFoundError", "MavenError", "PortInUseError"}
)
"""The test harness's errors, in :mod:`sdk.testing.errors` since 0.2; the names here go in 0.3."""


def __getattr__(name: str) -> Any:
    """The harness's errors under their old place: the same classes, with a DeprecationWarning.

    Deprecated, removed in 0.3: import them from :mod:`sdk.testing` (``sdk.testing.errors``).
    """
    if name not in _MOVED_TO_TESTING:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"sdk.errors.{name} is deprecated and removed in 0.3: import it from sdk.testing "
        f"(sdk.testing.errors.{name})",
        DeprecationWarning,
        stacklevel=2,
    )
    # By name, lazily: the harness sits above every layer (docs/architecture.md), and the
    # errors never load it unless an old spelling is used.
    return getattr(importlib.import_module("sdk.testing.errors"), name)
