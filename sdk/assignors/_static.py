"""Static (manual) mode: a declared member list and this instance's id, no group protocol.

Every instance is started with the same member list, topics and assignor, computes the same
plan, and ``assign()``s its own share; nothing joins a group, so nothing rebalances. If an
instance dies its partitions wait for it (or for an operator to redeploy with a new list):
availability is the deployment's job, in exchange for no rebalance pauses. ``group.id`` is still
used, only to commit offsets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from sdk._client import translating
from sdk._config import ConfigMapping
from sdk.assignors._protocol import Assignor, Member, Plan, TopicPartition, check_plan
from sdk.assignors._registry import resolve_assignor
from sdk.errors import ClosedError, ConfigurationError, from_kafka_error

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Message


__all__ = ["StaticAssignedConsumer", "static_plan"]


def static_plan(
    assignor: str | Assignor,
    member_ids: Sequence[str],
    topics: Sequence[str],
    partitions: Sequence[TopicPartition],
    *,
    racks: Mapping[str, str] | None = None,
) -> Plan:
    """Compute the plan of a declared member list (every member subscribes to ``topics``).

    Args:
        assignor: Assignor name or instance.
        member_ids: The declared member ids (unique, non-empty).
        topics: The topics every member consumes.
        partitions: The partitions of ``topics``.
        racks: Optional rack per member id.

    Returns:
        The validated, sorted plan.

    Raises:
        ConfigurationError: Duplicate or empty ids, unknown assignor, or an invalid plan.
    """
    if not member_ids or len(set(member_ids)) != len(member_ids) or not all(member_ids):
        raise ConfigurationError(
            f"static members must be unique and non-empty, got {list(member_ids)}",
            field="members",
        )
    resolved = resolve_assignor(assignor)
    members = [Member.of(mid, topics, rack=(racks or {}).get(mid)) for mid in member_ids]
    plan = resolved.assign(members, partitions)
    return check_plan(plan, members, partitions, origin=f"assignor {resolved.name}")


class StaticAssignedConsumer:
    """A consumer that assigns itself its share of a declared member list.

    Args:
        config: librdkafka consumer config (``group.id`` only for commits).
        topics: Topics every declared member consumes.
        assignor: Assignor name or instance (the same on every member).
        members: The declared member ids (the same list on every member).
        member_id: This instance's id; must be in ``members``.
        racks: Optional rack per member id, for rack-aware assignors.

    Raises:
        ConfigurationError: ``member_id`` not declared, a group-protocol setting given.
    """

    def __init__(
        self,
        config: ConfigMapping,
        topics: Sequence[str],
        assignor: str | Assignor,
        *,
        members: Sequence[str],
        member_id: str,
        racks: Mapping[str, str] | None = None,
    ) -> None:
        if member_id not in members:
            raise ConfigurationError(
                f"member_id {member_id!r} is not one of the declared members {list(members)}",
                field="member_id",
            )
        for key in ("group.protocol", "group.instance.id", "partition.assignment.strategy"):
            if key in config:
                raise ConfigurationError(
                    f"{key} has no effect in static mode (no group protocol runs)", field=key
                )
        self.assignor = resolve_assignor(assignor)
        self.topics = tuple(sorted(set(topics)))
        self.members = tuple(members)
        self.member_id = member_id
        self.racks = dict(racks or {})
        self._config = dict(config)
        self._consumer: Consumer | None = None
        self._closed = False
        self.plan: Plan = {}
        self.share: list[TopicPartition] = []

    @property
    def consumer(self) -> Consumer | None:
        """The underlying ``confluent_kafka.Consumer`` (None before :meth:`start`)."""
        return self._consumer

    def start(self, timeout: float = 10.0) -> list[TopicPartition]:
        """Create the consumer, compute the plan and assign this member's share (idempotent).

        Args:
            timeout: Seconds for the metadata request.

        Returns:
            This member's share.

        Raises:
            ClosedError: After :meth:`close`.
            UnknownTopicError: A topic does not exist.
            KafkaClientError: Metadata could not be fetched.
        """
        if self._closed:
            raise ClosedError("StaticAssignedConsumer is closed")
        if self._consumer is not None:
            return list(self.share)
        from confluent_kafka import Consumer
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        consumer = Consumer(self._config)
        try:
            partitions = []
            for topic in self.topics:
                with translating("list_topics"):
                    meta = consumer.list_topics(topic, timeout=timeout).topics[topic]
                if meta.error is not None:
                    raise from_kafka_error(meta.error, context=f"metadata of {topic!r}")
                partitions += [TopicPartition(topic, p) for p in meta.partitions]
        except Exception:
            consumer.close()
            raise
        self.plan = static_plan(
            self.assignor, self.members, self.topics, partitions, racks=self.racks
        )
        self.share = self.plan[self.member_id]
        consumer.assign([KafkaTopicPartition(tp.topic, tp.partition) for tp in self.share])
        self._consumer = consumer
        return list(self.share)

    def poll(self, timeout: float = 1.0) -> Message | None:
        """Poll one message from this member's share.

        Args:
            timeout: Seconds to wait.

        Returns:
            A ``confluent_kafka.Message`` or None.

        Raises:
            ClosedError: After :meth:`close`.
        """
        self.start()
        consumer = self._consumer
        assert consumer is not None  # start() made it, or raised
        return consumer.poll(timeout)

    def close(self) -> None:
        """Close the consumer (idempotent)."""
        self._closed = True
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def __enter__(self) -> StaticAssignedConsumer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
