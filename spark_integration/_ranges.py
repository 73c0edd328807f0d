"""Planning on the driver: one offset range per input topic-partition, and its explain text."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, TopicPartition

from sdk._client import ConsumerClient, admin_client, translating
from sdk._client import admin_config as sdk_admin_config
from sdk._connection import BrokerContact
from sdk._deprecation import warn_renamed
from sdk.core import session
from sdk.errors import ConfigurationError, KafkaClientError, UnknownTopicError, from_kafka_error
from sdk.profiles import ConsumerProfile

__all__ = [
    "PartitionRange",
    "admin_config",
    "committed_offsets",
    "explain_ranges",
    "fetch_committed",
    "plan_ranges",
    "range_transactional_id",
]


@dataclass(frozen=True)
class PartitionRange:
    """The work of one Spark task: input offsets ``[start, end)`` of one topic-partition.

    Attributes:
        topic: Input topic.
        partition: Input partition.
        start: The group's committed offset when planned (or the reset position).
        end: The last stable offset (read_committed end) when planned; the task stops there.
        transactional_id: The task's transactional.id, stable per (job, group, topic, partition).
    """

    topic: str
    partition: int
    start: int
    end: int
    transactional_id: str

    @property
    def size(self) -> int:
        """Offsets in the range (an upper bound of records: markers and aborted records count)."""
        return max(0, self.end - self.start)


def range_transactional_id(prefix: str, job: str, group: str, topic: str, partition: int) -> str:
    """Return the transactional.id of the task for one input partition.

    It depends only on the job, the group and the input partition, never on Spark's partition
    id or attempt number, so every attempt and every re-run of the job for that input partition
    uses the same id: the newest ``init_transactions()`` fences all older ones. It is the SDK's
    :func:`sdk.core.session.transactional_id_for` with ``job.group.topic.partition`` as the
    instance id, and :attr:`PartitionRange.transactional_id` of a planned range.
    (``spark_integration.transactional_id_for``, its old name, is deprecated and removed in 0.3.)
    """
    return session.transactional_id_for(prefix, instance_id=f"{job}.{group}.{topic}.{partition}")


def admin_config(consumer: ConsumerProfile) -> dict[str, Any]:
    """Return the connection keys (bootstrap, security) of a consumer profile for an AdminClient."""
    return sdk_admin_config(
        consumer.bootstrap_servers,
        consumer.security.render(),
        consumer.extras,
        client_id=consumer.client_id,
    )


def _result(future: Any, context: str, timeout_s: float) -> Any:
    with translating(context):
        return future.result(timeout_s)


def _partitions(admin: Any, topics: Sequence[str], timeout_s: float) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for topic in topics:
        with translating(f"list_topics({topic})"):
            meta = admin.list_topics(topic=topic, timeout=timeout_s).topics.get(topic)
        if meta is None or meta.error is not None or not meta.partitions:
            error = getattr(meta, "error", None)
            if error is not None:
                raise from_kafka_error(error, context=f"list_topics({topic})")
            raise UnknownTopicError(f"list_topics({topic}): topic has no partitions")
        out.extend((topic, p) for p in sorted(meta.partitions))
    return out


_COORDINATOR_CODES = (
    "NOT_COORDINATOR",
    "COORDINATOR_LOAD_IN_PROGRESS",
    "COORDINATOR_NOT_AVAILABLE",
    "UNSTABLE_OFFSET_COMMIT",
    "_TIMED_OUT",
    "REQUEST_TIMED_OUT",
    "_TRANSPORT",
    "_WAIT_COORD",
)


def fetch_committed(
    client: ConsumerClient, partitions: list[TopicPartition], timeout_s: float, context: str
) -> Any:
    """``client.committed(partitions)``, retried while the group coordinator is not ready.

    librdkafka reports NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS from ``committed()``
    without marking them retriable (seen on a fresh Kafka 4.3.1 cluster, where the offsets
    topic is still loading), and UNSTABLE_OFFSET_COMMIT while a transaction that commits
    offsets is pending (require_stable); all of them are retried for up to ``timeout_s`` seconds.

    Raises:
        KafkaClientError: Another error, or the coordinator did not answer in time.
    """
    codes = {getattr(KafkaError, name) for name in _COORDINATOR_CODES if hasattr(KafkaError, name)}
    deadline = time.monotonic() + timeout_s
    wait = 0.1
    while True:
        try:
            with translating(context):
                return client.committed(
                    partitions, max(1.0, min(10.0, deadline - time.monotonic()))
                )
        except KafkaClientError as exc:
            again = exc.code in codes or (exc.retriable and not exc.fatal)
            if not again or time.monotonic() + wait >= deadline:
                raise
            time.sleep(wait)
            wait = min(1.0, wait * 2)


def committed_offsets(
    consumer: ConsumerProfile,
    partitions: Sequence[tuple[str, int]],
    timeout_s: float = 60.0,
    *,
    consumer_factory: Callable[[dict[str, Any]], ConsumerClient] | None = None,
) -> dict[tuple[str, int], int]:
    """Read the group's committed offsets the way a read_committed member would.

    A non-subscribed consumer with the group's ``group.id`` and ``isolation.level=
    read_committed`` calls ``committed()``: librdkafka then sends the OffsetFetch with
    ``require_stable`` (KIP-447), so the coordinator answers only once no transaction that
    commits offsets for these partitions is pending. (confluent-kafka 2.16.1's
    ``AdminClient.list_consumer_group_offsets`` crashed the process with SIGSEGV when the
    group coordinator was still loading on a fresh cluster, so it is not used.)

    Returns:
        ``{(topic, partition): offset}``; -1 where the group has no committed offset.

    Raises:
        KafkaClientError: The request failed after retries.
    """
    from confluent_kafka import Consumer, TopicPartition

    config: dict[str, Any] = dict(admin_config(consumer))
    config.update(
        {
            "group.id": consumer.group_id,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    client = (consumer_factory or Consumer)(config)
    try:
        tps = [TopicPartition(t, p) for t, p in partitions]
        got = fetch_committed(
            client, tps, timeout_s, f"committed offsets of group {consumer.group_id}"
        )
    finally:
        client.close()
    out: dict[tuple[str, int], int] = {}
    for tp in got:
        if tp.error is not None:
            raise from_kafka_error(tp.error, context=f"committed offset {tp.topic}[{tp.partition}]")
        out[(tp.topic, tp.partition)] = tp.offset if tp.offset >= 0 else -1
    return out


def _list_offsets(
    admin: Any, partitions: Sequence[tuple[str, int]], spec: Any, timeout_s: float
) -> dict[tuple[str, int], int]:
    from confluent_kafka import IsolationLevel, TopicPartition

    request = {TopicPartition(t, p): spec for t, p in partitions}
    futures = admin.list_offsets(request, isolation_level=IsolationLevel.READ_COMMITTED)
    return {
        (tp.topic, tp.partition): _result(
            fut, f"list_offsets {tp.topic}[{tp.partition}]", timeout_s
        ).offset
        for tp, fut in futures.items()
    }


def plan_ranges(
    consumer: ConsumerProfile,
    topics: Sequence[str],
    *,
    job: str,
    transactional_id_prefix: str,
    timeout_s: float = 30.0,
    admin_factory: Any = None,
    timeout: float | None = None,
) -> list[PartitionRange]:
    """Plan one range per input topic-partition: committed offset → last stable offset.

    Args:
        consumer: The consumer profile (its group_id is the job's group).
        topics: Input topics.
        job: Job name (part of every transactional.id).
        transactional_id_prefix: The producer profile's prefix.
        timeout_s: Seconds per admin request.
        admin_factory: Makes the AdminClient from a config dict (tests).
        timeout: Deprecated name of ``timeout_s``, removed in 0.3.

    Returns:
        The ranges, sorted by (topic, partition); empty ranges included.

    Raises:
        ConfigurationError: A partition has no committed offset and auto_offset_reset='error'.
        BrokerUnreachableError: No broker of ``bootstrap_servers`` answered within
            ``socket.connection.setup.timeout.ms`` (the address is named).
        KafkaClientError: An admin request failed.
    """
    import confluent_kafka.admin as kafka_admin

    if timeout is not None:
        warn_renamed("plan_ranges", "timeout", "timeout_s")
        timeout_s = timeout
    spec: Any = getattr(kafka_admin, "OffsetSpec")  # noqa: B009 (not in the typed stubs)
    config = admin_config(consumer)
    # as every client: librdkafka's log collapsed, and no broker at the address fails fast
    # with the address named (not a metadata timeout)
    setup = "socket.connection.setup.timeout.ms"
    contact = BrokerContact({**config, **{k: v for k, v in consumer.extras.items() if k == setup}})
    config.update(logger=contact, error_cb=contact.on_error)
    admin = (admin_factory or admin_client)(config)
    contact.wait(
        lambda t: admin.list_topics(timeout=t),
        lambda: False,
        f"plan_ranges({', '.join(topics)})",
        serve=lambda: admin.poll(0) if hasattr(admin, "poll") else None,
    )
    parts = _partitions(admin, topics, timeout_s)
    committed = committed_offsets(consumer, parts, timeout_s)
    stable_end = _list_offsets(admin, parts, spec.latest(), timeout_s)
    earliest = _list_offsets(admin, parts, spec.earliest(), timeout_s)
    return [
        PartitionRange(
            topic=t,
            partition=p,
            start=_start(consumer, (t, p), committed, earliest, stable_end),
            end=stable_end[(t, p)],
            transactional_id=range_transactional_id(
                transactional_id_prefix, job, consumer.group_id, t, p
            ),
        )
        for t, p in parts
    ]


def _start(
    consumer: ConsumerProfile,
    key: tuple[str, int],
    committed: Mapping[tuple[str, int], int],
    earliest: Mapping[tuple[str, int], int],
    end: Mapping[tuple[str, int], int],
) -> int:
    offset = committed.get(key, -1)
    if offset >= 0:
        return max(offset, earliest[key])  # retention may have deleted committed offsets
    reset = consumer.auto_offset_reset
    if reset == "earliest":
        return earliest[key]
    if reset == "latest":
        return end[key]
    raise ConfigurationError(
        f"consumer.auto_offset_reset: group {consumer.group_id!r} has no committed offset for "
        f"{key[0]}[{key[1]}] and auto_offset_reset='error'",
        field="consumer.auto_offset_reset",
    )


def explain_ranges(ranges: Sequence[PartitionRange], *, job: str, group: str) -> str:
    """Describe what the job will do: one line per input partition, then totals."""
    lines = [
        f"exactly-once batch job {job!r}, group {group!r}: {len(ranges)} Spark tasks "
        "(one per input partition, never split)"
    ]
    for r in ranges:
        state = "nothing to do" if r.size == 0 else f"{r.size} offsets"
        lines.append(
            f"  {r.topic}[{r.partition}]  offsets [{r.start}, {r.end})  {state}  "
            f"transactional.id={r.transactional_id}"
        )
    lines.append(f"  total: {sum(r.size for r in ranges)} offsets (markers and aborted included)")
    return "\n".join(lines)
