"""The error seam: the one place where confluent-kafka's exceptions become the SDK's.

Every call into a confluent-kafka client that can raise ``KafkaException`` goes through
:func:`translating` (one call, translated) or :func:`call_kafka` (retried while the error is
transient, then translated). No other module catches ``KafkaException``: like httpx's
``map_httpcore_exceptions``, a layer above this one only ever sees :class:`~sdk.errors.SdkError`.

The classification of an error (its :mod:`sdk.errors` subclass, and the ``retriable``,
``fatal`` and ``txn_requires_abort`` flags) is decided here, at translation, from what the
caller says the call was (``transactional``, ``commit``, ``abortable``); it is never patched
afterwards.

One confluent-kafka quirk is handled here too: when a fatal error (e.g. a fenced transactional
producer) reaches a client that has an ``error_cb``, ``poll()`` and ``flush()`` raise the bare
``KafkaError`` object itself, which is not a ``BaseException`` — no ``except`` clause but a
bare one can catch it, and a thread that meets it dies without a printable traceback. Both
entry points below catch it and translate it like a ``KafkaException``.

:class:`ProducerClient`, :class:`ConsumerClient` and :class:`ShareConsumerClient` name the
calls the SDK makes on confluent-kafka's clients, so that a client slot is typed by what it must
do: a real ``confluent_kafka.Producer``/``Consumer``/``ShareConsumer`` satisfies them, and so do
the in-tree fakes of :mod:`sdk.testing.fakes`. What the SDK reads of a message is
:class:`sdk._message.KafkaMessage`; the admin client's Protocol and its one factory are in
:mod:`sdk._admin`.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, TypeVar, cast, overload

from confluent_kafka import (
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from sdk._admin import AdminApi, admin_client, admin_config, connection_keys
from sdk._config import ClientConfig
from sdk._message import DeliveryCallback, KafkaMessage, MessageHeaders, polled
from sdk.errors import RETRY_FOR_S, KafkaClientError, from_kafka_error, is_transient

if TYPE_CHECKING:  # confluent-kafka's stubs import it from here too
    from confluent_kafka import AcknowledgeType  # 2.15.0+: not imported at run time
    from confluent_kafka.admin._metadata import ClusterMetadata

__all__ = [
    "RETRY_FOR_S",
    "AcknowledgementCommitCallback",
    "AdminApi",
    "ConsumerClient",
    "DeliveryCallback",
    "GroupMetadata",
    "KafkaMessage",
    "MessageHeaders",
    "ProducerClient",
    "RebalanceCallback",
    "ShareConsumerClient",
    "admin_client",
    "admin_config",
    "call_kafka",
    "connection_keys",
    "kafka_error",
    "polled",
    "positional_produce",
    "share_consumer",
    "takes_all_positional",
    "timeout_error",
    "translating",
]

T = TypeVar("T")

GroupMetadata: TypeAlias = object
"""A consumer's ``consumer_group_metadata()``: opaque to the SDK, which hands it on as it is to
``send_offsets_to_transaction`` (confluent-kafka's stubs say ``Any``)."""

RebalanceCallback: TypeAlias = "Callable[[ConsumerClient, list[TopicPartition]], None]"
"""``on_assign`` / ``on_revoke`` / ``on_lost``: ``(consumer, partitions)``."""


class ProducerClient(Protocol):
    """The calls the SDK makes on a ``confluent_kafka.Producer`` (signatures as in its stubs).

    Implemented by ``confluent_kafka.Producer`` and :class:`sdk.testing.fakes.FakeProducerClient`.
    ``on_delivery``, ``timestamp`` and ``headers`` are keyword-only here (confluent-kafka's
    fifth parameter is ``callback``, an alias of ``on_delivery``); the hot paths call
    confluent-kafka's positionally through :func:`positional_produce`.
    """

    def produce(
        self,
        topic: str,
        value: str | bytes | None = None,
        key: str | bytes | None = None,
        partition: int = -1,
        *,
        # Any: confluent-kafka's callback gets a Message, whose stubs say Optional where the
        # SDK's callbacks read a KafkaMessage (the same object)
        on_delivery: Any = None,
        timestamp: int = 0,
        headers: MessageHeaders | None = None,
    ) -> None:
        """Queue one record (delivery is reported to ``on_delivery`` by poll/flush)."""
        ...

    def poll(self, timeout: float = -1) -> int:
        """Serve delivery reports and callbacks; return how many were served."""
        ...

    def flush(self, timeout: float = -1) -> int:
        """Wait for every queued record; return how many are still queued."""
        ...

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        """Drop queued (and in-flight) records."""
        ...

    def __len__(self) -> int:
        """Records queued or in flight (awaiting their delivery report)."""
        ...

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """Cluster metadata."""
        ...

    def init_transactions(self, timeout: float = -1) -> None:
        """Register the transactional.id (bumps its epoch, fencing older producers)."""
        ...

    def begin_transaction(self) -> None:
        """Begin a transaction."""
        ...

    def send_offsets_to_transaction(
        self, positions: list[TopicPartition], group_metadata: GroupMetadata, timeout: float = -1
    ) -> None:
        """Add the consumer's positions to the open transaction."""
        ...

    def commit_transaction(self, timeout: float = -1) -> None:
        """Commit the open transaction."""
        ...

    def abort_transaction(self, timeout: float = -1) -> None:
        """Abort the open transaction."""
        ...


class ConsumerClient(Protocol):
    """The calls the SDK makes on a ``confluent_kafka.Consumer`` (signatures as in its stubs).

    Implemented by ``confluent_kafka.Consumer`` and :class:`sdk.testing.fakes.FakeConsumerClient`.
    ``consume()`` returns records and events alike, as confluent-kafka types them;
    :func:`consume_ready` (and :func:`polled`) type them as :class:`KafkaMessage`.
    """

    def subscribe(
        self,
        topics: list[str],
        on_assign: RebalanceCallback | None = None,
        on_revoke: RebalanceCallback | None = None,
        on_lost: RebalanceCallback | None = None,
    ) -> None:
        """Join the group; the callbacks get ``(consumer, partitions)``."""
        ...

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        """Up to ``num_messages`` messages (and error events), waiting up to ``timeout`` s."""
        ...

    @overload
    def commit(self, *, asynchronous: Literal[False]) -> list[TopicPartition]: ...

    @overload
    def commit(
        self, *, offsets: list[TopicPartition], asynchronous: Literal[False]
    ) -> list[TopicPartition]: ...

    def store_offsets(
        self, message: Message | None = None, offsets: list[TopicPartition] | None = None
    ) -> None:
        """Store offsets for the next (auto) commit."""
        ...

    def committed(
        self, partitions: list[TopicPartition], timeout: float = -1
    ) -> list[TopicPartition]:
        """The group's committed offsets of ``partitions``."""
        ...

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        """The next offset this consumer will read, per partition."""
        ...

    def seek(self, partition: TopicPartition) -> None:
        """Move the fetch position of an assigned partition."""
        ...

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Replace the assignment (no group rebalance)."""
        ...

    def assignment(self) -> list[TopicPartition]:
        """The current assignment."""
        ...

    def pause(self, partitions: list[TopicPartition]) -> None:
        """Stop fetching ``partitions`` until resumed (a rebalance does not resume them)."""
        ...

    def resume(self, partitions: list[TopicPartition]) -> None:
        """Fetch paused ``partitions`` again."""
        ...

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        """Add partitions to the assignment."""
        ...

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        """Remove partitions from the assignment."""
        ...

    def consumer_group_metadata(self) -> GroupMetadata:
        """The group metadata that ``send_offsets_to_transaction`` needs."""
        ...

    def memberid(self) -> str | None:
        """The group member id (None without a group session)."""
        ...

    def close(self) -> None:
        """Leave the group and release the client."""
        ...

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """Cluster metadata."""
        ...


AcknowledgementCommitCallback: TypeAlias = Callable[
    [dict[TopicPartition, set[int]], KafkaException | None], None
]
"""A share consumer's ``(offsets, exception)`` report of committed acknowledgements."""


class ShareConsumerClient(Protocol):
    """The calls the SDK makes on a ``confluent_kafka.ShareConsumer`` (a share group, KIP-932).

    ``acknowledge`` takes back a message ``poll`` returned: both are :class:`KafkaMessage`
    here, where confluent-kafka's stubs say ``Message`` (see :class:`KafkaMessage` for why);
    :func:`share_consumer` makes the real client. Implemented by
    ``confluent_kafka.ShareConsumer`` and the queue tests' fakes.
    """

    def subscribe(self, topics: list[str]) -> None:
        """Join the share group."""
        ...

    def poll(self, timeout: float = -1) -> Iterable[KafkaMessage]:
        """The records (and error events) acquired for this member, waiting up to ``timeout`` s."""
        ...

    def acknowledge(self, message: KafkaMessage, ack_type: AcknowledgeType = ...) -> None:
        """Acknowledge one polled record (ACCEPT, RELEASE or REJECT)."""
        ...

    def commit_sync(
        self, timeout: float = 60
    ) -> dict[TopicPartition, KafkaException | None] | None:
        """Send the pending acknowledgements; per partition, the error if it was refused."""
        ...

    def set_acknowledgement_commit_callback(
        self, callback: AcknowledgementCommitCallback | None
    ) -> None:
        """Where the outcome of acknowledgements committed in the background goes."""
        ...

    def close(self) -> None:
        """Leave the share group and release the client."""
        ...


SHARE_CONSUMER_CLIENT = "2.15.0"
"""The first confluent-kafka release with ``ShareConsumer`` (measured: docs/compatibility.md)."""


def share_consumer(config: ClientConfig) -> ShareConsumerClient:
    """A ``confluent_kafka.ShareConsumer`` (typed as the SDK reads its messages).

    Raises:
        ConfigurationError: The installed confluent-kafka has no ``ShareConsumer`` (older than
            2.15.0): the message names both versions.
        KafkaException: librdkafka refused a key or value of ``config``.
    """
    import confluent_kafka

    cls = getattr(confluent_kafka, "ShareConsumer", None)
    if cls is None:
        from sdk.errors import ConfigurationError

        raise ConfigurationError(
            f"a queue (sdk.queue: share groups, KIP-932) needs confluent-kafka "
            f"{SHARE_CONSUMER_CLIENT} or later (ShareConsumer); the installed confluent-kafka "
            f"is {confluent_kafka.__version__}: pip install "
            f"'confluent-kafka>={SHARE_CONSUMER_CLIENT}'"
        )
    return cast(ShareConsumerClient, cls(config))


Produce = Callable[[str, "bytes | None", "bytes | None", int, "DeliveryCallback | None"], None]
"""``produce(topic, value, key, partition, on_delivery)``: see :func:`positional_produce`."""


def positional_produce(client: ProducerClient) -> Produce:
    """The client's ``produce``, to be called with every argument positional.

    Call it as ``produce(topic, value, key, partition, on_delivery)``, with partition ``-1``
    for the configured partitioner (librdkafka's ``RD_KAFKA_PARTITION_UA``, the default).

    Why: ``confluent_kafka.Producer.produce`` parses its arguments with
    ``PyArg_ParseTupleAndKeywords``. Passing ``on_delivery`` by keyword makes CPython build a
    dict, and the parser then looks each optional parameter before it up by a C string, a
    cost on every record. Positional, ``on_delivery`` goes fifth: its documented position,
    ``produce(topic, [value], [key], [partition], [on_delivery], ...)``
    (``tests/sdk/test_client.py`` checks the installed release).

    A client that is not a ``confluent_kafka.Producer`` with its own ``produce`` (a fake of
    :mod:`sdk.testing.fakes`, a subclass that overrides it) gets an adapter that passes
    ``on_delivery`` by keyword, as :class:`ProducerClient` declares it.
    """
    if takes_all_positional(type(client)):
        # the Protocol declares on_delivery keyword-only; confluent-kafka's takes it fifth
        return cast(Produce, client.produce)
    by_keyword = client.produce

    def adapter(
        topic: str,
        value: bytes | None,
        key: bytes | None,
        partition: int,
        on_delivery: DeliveryCallback | None,
    ) -> None:
        by_keyword(topic, value, key, partition, on_delivery=on_delivery)

    return adapter


def takes_all_positional(client_type: type) -> bool:
    """Whether clients of this type take ``produce(topic, value, key, partition, on_delivery)``.

    True for ``confluent_kafka.Producer`` and subclasses that keep its ``produce``.
    """
    return getattr(client_type, "produce", None) is Producer.produce


def kafka_error(exc: BaseException) -> KafkaError | None:
    """The ``KafkaError`` a ``KafkaException`` carries (None if it carries none)."""
    return exc.args[0] if exc.args else None


def _bare_kafka_error() -> KafkaError | None:
    """The bare ``KafkaError`` being raised (see the module docstring), or None."""
    value = sys.exc_info()[1]
    return value if isinstance(value, KafkaError) else None


def timeout_error(reason: str) -> KafkaError:
    """A ``KafkaError(_TIMED_OUT)`` for a timeout the SDK itself noticed (e.g. records left)."""
    return KafkaError(KafkaError._TIMED_OUT, reason)


@contextmanager
def translating(
    context: str,
    *,
    transactional: bool = False,
    commit: bool = False,
    abortable: bool = False,
    record: Any = None,
) -> Iterator[None]:
    """Translate a ``KafkaException`` raised in the block into the SDK's tree.

    Args:
        context: What the SDK was doing; starts the error message.
        transactional: The call was a transactional producer call.
        commit: The call committed or stored offsets (an unclassified error is a CommitError).
        abortable: The call produced inside a transaction: an error that is neither fenced nor
            fatal leaves the transaction abortable (librdkafka refuses further produce() with
            ``_STATE`` once a delivery failed, without the txn_requires_abort flag).
        record: The record concerned, kept on the error.

    Raises:
        KafkaClientError: The translated error, chained to the original.
    """

    def translated(err: KafkaError | None) -> KafkaClientError:
        return from_kafka_error(
            err,
            context=context,
            record=record,
            transactional=transactional or abortable,
            commit=commit,
            abortable=abortable,
        )

    try:
        yield
    except KafkaException as exc:
        raise translated(kafka_error(exc)) from exc
    except BaseException:
        raise
    except:  # noqa: E722 - only a bare except catches the bare KafkaError (module docstring)
        err = _bare_kafka_error()
        if err is None:
            raise
        raise translated(err) from None


def call_kafka(
    fn: Callable[[], T],
    *,
    context: str,
    transactional: bool = False,
    commit: bool = False,
    attempts: int = 5,
    on_retry: Callable[[str], None] | None = None,
) -> T:
    """Run one client call; retry it while the error is transient (backoff 0.05 s doubling to 2 s).

    Args:
        fn: The call, e.g. ``lambda: client.commit(asynchronous=False)``.
        context: Name of the call, starts the error message.
        transactional: See :func:`translating`.
        commit: See :func:`translating`.
        attempts: Attempts before the last error is raised (with more than one, retries go on
            for at least :data:`sdk.errors.RETRY_FOR_S` seconds too: a coordinator loading
            ``__consumer_offsets`` after a bounce answers for longer than five quick tries).
        on_retry: Called with ``context`` before each retry (counters, metrics).

    Returns:
        What ``fn`` returned.

    Raises:
        KafkaClientError: The translated error once retries are spent or the error is not
            transient.
    """
    started = time.monotonic()
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except KafkaException as exc:
            err = kafka_error(exc)
            spent = attempt >= attempts and (
                attempts <= 1 or time.monotonic() - started >= RETRY_FOR_S
            )
            if spent or err is None or not is_transient(err):
                raise from_kafka_error(
                    err, context=context, transactional=transactional, commit=commit
                ) from exc
        except BaseException:
            raise
        except:  # noqa: E722 - the bare KafkaError of a fatal error (module docstring)
            err = _bare_kafka_error()
            if err is None:
                raise
            raise from_kafka_error(
                err, context=context, transactional=transactional, commit=commit
            ) from None
        if on_retry is not None:
            on_retry(context)
        time.sleep(min(2.0, 0.05 * 2 ** (attempt - 1)))  # 0.05, 0.1, ... 2 s


def consume_ready(client: ConsumerClient, limit: int, timeout_s: float) -> list[KafkaMessage]:
    """Up to ``limit`` messages, back as soon as there is one, waiting at most ``timeout_s``.

    librdkafka's ``consume(n, timeout)`` returns when it has ``n`` messages or the timeout
    has passed, so below ``n`` records per timeout every call waits the whole timeout: at
    1,000 records/s and a 100 ms poll each record sat up to 100 ms before it was handled.
    Here a call takes what is queued without waiting; only when nothing is does it wait, for
    one message, and then takes what came with it. A full queue still gives full batches.
    """
    messages = client.consume(limit, 0)
    if messages or timeout_s <= 0:
        return polled(messages)
    first = client.consume(1, timeout_s)
    if len(first) != 1 or limit == 1:
        return polled(first)
    return polled(first + client.consume(limit - 1, 0))
