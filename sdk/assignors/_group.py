"""Custom (Python) assignors on a dynamic consumer group, over librdkafka's eager protocol.

How it works: the consumer joins the group with a native *eager* strategy (``range``) only for
membership and liveness. On every assignment it asks the coordinator for the group description
(``AdminClient.describe_consumer_groups``) and uses it only when it describes the generation
this member was just given: the group is ``Stable``, this member is in it, and its described
assignment equals the one librdkafka delivered. (Any other answer means a newer generation is
already forming; the member then holds nothing and returns at once, because that generation
waits for it to rejoin.) Then every member computes
``assignor.assign(members, partitions)`` from the same data — the members of that generation
and the partitions librdkafka distributed in it (the union of the members' native assignments) —
and assigns only its own share. Assignors are deterministic, so all members compute one plan.

Why a partition has one owner after the group is stable: eager rebalancing revokes every
partition of every member before the next generation forms, the description check ties each
plan to exactly one generation, and all members of a generation compute the same plan.
Combinations that break one of these premises are rejected with :class:`ConfigurationError`:
``group.protocol=consumer`` (KIP-848 has no group-wide revoke barrier),
``cooperative-sticky`` (incremental revocation), ``group.instance.id`` (a restarted static
member takes over under a new id without a rebalance), regex subscriptions and exactly-once
profiles (not proven with this overlay). Members must all run this class with the same topics
and assignor: each member's ``client.id`` carries a fingerprint of both, and a member that sees a
foreign fingerprint assigns nothing and raises from :meth:`GroupAssignedConsumer.poll`.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from sdk._client import admin_client, connection_keys, translating
from sdk._config import ConfigMapping
from sdk._deprecation import warn_renamed
from sdk.assignors._protocol import Assignor, Member, Plan, TopicPartition, check_plan
from sdk.assignors._registry import resolve_assignor
from sdk.errors import (
    ClosedError,
    ConfigurationError,
    KafkaClientError,
    KafkaTimeoutError,
    SdkError,
)

if TYPE_CHECKING:
    from confluent_kafka import Consumer, Message
    from confluent_kafka import TopicPartition as KafkaTopicPartition

    from sdk._client import AdminApi

__all__ = ["GroupAssignedConsumer", "check_group_config", "decode_client_id", "encode_client_id"]

_FP = "ks"


def encode_client_id(base: str, fingerprint: str, metadata: Mapping[str, str]) -> str:
    """Return ``base;ks=<fingerprint>;k=v...`` (the coordinator shows every member's client.id).

    Args:
        base: The user's client id.
        fingerprint: The topics/assignor fingerprint.
        metadata: Member metadata (e.g. ``{"rack": "a"}``); keys and values without ``;=``.

    Returns:
        The client id.

    Raises:
        ConfigurationError: A key or value contains ``;`` or ``=``.
    """
    for key, value in metadata.items():
        if any(c in f"{key}{value}" for c in ";="):
            raise ConfigurationError(
                f"member metadata {key!r}={value!r} must not contain ';' or '='", field="metadata"
            )
    parts = [base, f"{_FP}={fingerprint}", *(f"{k}={metadata[k]}" for k in sorted(metadata))]
    return ";".join(parts)


def decode_client_id(client_id: str) -> tuple[str | None, dict[str, str]]:
    """Split a client id made by :func:`encode_client_id` into fingerprint and metadata.

    Args:
        client_id: The client id.

    Returns:
        ``(fingerprint or None, metadata)``.
    """
    fields = dict(part.split("=", 1) for part in client_id.split(";")[1:] if "=" in part)
    return fields.pop(_FP, None), fields


def check_group_config(config: ConfigMapping, topics: Sequence[str], guarantee: str) -> None:
    """Reject consumer settings under which the overlay cannot guarantee one owner per partition.

    Args:
        config: The librdkafka consumer config.
        topics: The subscription.
        guarantee: The delivery guarantee (``"at_least_once"``...).

    Raises:
        ConfigurationError: See the module docstring for the rejected combinations.
    """
    if not config.get("group.id"):
        raise ConfigurationError("a consumer group needs group.id", field="group.id")
    if str(config.get("group.protocol", "classic")).lower() == "consumer":
        raise ConfigurationError(
            "custom assignors need the classic protocol: with group.protocol=consumer (KIP-848) "
            "the broker assigns and members reconcile one by one, without the group-wide "
            "revocation a client-computed plan relies on",
            field="group.protocol",
        )
    strategy = str(config.get("partition.assignment.strategy", "range"))
    if "cooperative" in strategy:
        raise ConfigurationError(
            "custom assignors need an eager base strategy (range or roundrobin): cooperative "
            "rebalancing keeps partitions through a rebalance, so two generations' plans overlap",
            field="partition.assignment.strategy",
        )
    if config.get("group.instance.id"):
        raise ConfigurationError(
            "custom assignors cannot use static membership: a restarted static member takes "
            "over under a new member id without a rebalance, so members' plans diverge",
            field="group.instance.id",
        )
    if guarantee.replace("-", "_").lower() == "exactly_once":
        raise ConfigurationError(
            "custom assignors on dynamic groups are not proven for exactly-once: use a native "
            "assignor, or static mode with one transactional.id per declared member",
            field="assignor",
        )
    if not topics or any(t.startswith("^") for t in topics):
        raise ConfigurationError(
            "custom assignors need an explicit topic list (no regex subscriptions): every "
            "member must know every other member's subscription",
            field="topics",
        )


class GroupAssignedConsumer:
    """A consumer in a dynamic group whose partitions a Python assignor chooses.

    Holds a ``confluent_kafka.Consumer`` (created lazily by :meth:`start` or the first
    :meth:`poll`); do not call ``assign``/``subscribe`` on it yourself.

    Args:
        config: librdkafka consumer config (needs ``group.id``; ``client.id`` is extended).
        topics: Topics to subscribe to (the same on every member).
        assignor: The assignor name or instance (the same on every member).
        guarantee: The delivery guarantee the caller implements (``exactly_once`` is rejected).
        metadata: This member's metadata other members' assignors see (e.g. ``{"rack": "a"}``).
        on_assign: Called with this member's share after each assignment.
        on_revoke: Called with this member's share before it is revoked (e.g. to commit).
        describe_timeout_s: Seconds to obtain a description of the new generation.
        describe_timeout: Deprecated name of ``describe_timeout_s``, removed in 0.3.

    Attributes:
        plan: The group's plan of the current generation ({} while none or superseded).
        share: This member's partitions in ``plan``.
        generations: Assignments received.
        superseded: Assignments skipped because a newer generation was already forming.

    Raises:
        ConfigurationError: An unsafe combination (see :func:`check_group_config`) or an
            unknown assignor.
    """

    def __init__(
        self,
        config: ConfigMapping,
        topics: Sequence[str],
        assignor: str | Assignor,
        *,
        guarantee: str = "at_least_once",
        metadata: Mapping[str, str] | None = None,
        on_assign: Callable[[list[TopicPartition]], None] | None = None,
        on_revoke: Callable[[list[TopicPartition]], None] | None = None,
        describe_timeout_s: float = 15.0,
        describe_timeout: float | None = None,
    ) -> None:
        if describe_timeout is not None:
            warn_renamed("GroupAssignedConsumer", "describe_timeout", "describe_timeout_s")
            describe_timeout_s = describe_timeout
        check_group_config(config, topics, guarantee)
        self.assignor = resolve_assignor(assignor)
        self.topics = tuple(sorted(set(topics)))
        self.metadata = dict(metadata or {})
        digest = hashlib.sha256(f"{self.assignor.name}|{','.join(self.topics)}".encode())
        self.fingerprint = digest.hexdigest()[:12]
        self._config = dict(config)
        self._config.setdefault("partition.assignment.strategy", "range")
        self._config["client.id"] = encode_client_id(
            str(config.get("client.id", "rdkafka")), self.fingerprint, self.metadata
        )
        self._on_assign_cb = on_assign
        self._on_revoke_cb = on_revoke
        self._describe_timeout = describe_timeout_s
        self._consumer: Consumer | None = None
        self._closed = False
        self._admin: AdminApi | None = None
        self._error: SdkError | None = None
        self.plan: Plan = {}
        self.share: list[TopicPartition] = []
        self.generations = 0
        self.superseded = 0

    @property
    def consumer(self) -> Consumer | None:
        """The underlying ``confluent_kafka.Consumer`` (None before :meth:`start`)."""
        return self._consumer

    @property
    def group_id(self) -> str:
        """The consumer group id."""
        return str(self._config["group.id"])

    def start(self) -> None:
        """Create the consumer and subscribe (idempotent).

        Raises:
            ClosedError: After :meth:`close`.
        """
        if self._closed:
            raise ClosedError("GroupAssignedConsumer is closed")
        if self._consumer is not None:
            return
        from confluent_kafka import Consumer

        self._consumer = Consumer(self._config)
        # the connection keys only: the consumer's client.id carries this member's metadata
        admin = {"bootstrap.servers": self._config["bootstrap.servers"]}
        self._admin = admin_client({**admin, **connection_keys(self._config)})
        self._consumer.subscribe(
            list(self.topics),
            on_assign=self._handle_assign,
            on_revoke=self._handle_revoke,
            on_lost=self._handle_lost,
        )

    def poll(self, timeout: float = 1.0) -> Message | None:
        """Poll one message (rebalance callbacks run in here).

        Args:
            timeout: Seconds to wait.

        Returns:
            A ``confluent_kafka.Message`` or None.

        Raises:
            ClosedError: After :meth:`close`.
            ConfigurationError: The group's members disagree on topics/assignor, or the
                assignor failed or returned an invalid plan (this member then holds no
                partitions).
            KafkaTimeoutError: The new generation could not be described in time (this member
                holds no partitions until the next rebalance).
        """
        self.start()
        consumer = self._consumer
        assert consumer is not None  # start() made it, or raised
        msg = consumer.poll(timeout)
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return msg

    def assignment(self) -> list[TopicPartition]:
        """Return what librdkafka currently has assigned to this member, sorted."""
        if self._consumer is None:
            return []
        return sorted(TopicPartition(tp.topic, tp.partition) for tp in self._consumer.assignment())

    def close(self) -> None:
        """Leave the group (revoking this member's share) and close the consumer."""
        self._closed = True
        self._admin = None
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def __enter__(self) -> GroupAssignedConsumer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- rebalance callbacks (run inside poll) ----------------------------------------------

    def _handle_assign(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        from confluent_kafka import TopicPartition as KafkaTopicPartition

        native = sorted(TopicPartition(tp.topic, tp.partition) for tp in partitions)
        try:
            plan = self._group_plan(consumer, native)
        except SdkError as exc:
            self._error = exc
            plan = {}
        except Exception as exc:  # a broken assignor must never leave the native share assigned
            error = ConfigurationError(
                f"assignor {self.assignor.name!r} failed: {exc!r}", field="assignor"
            )
            error.__cause__ = exc
            self._error = error
            plan = {}
        self.plan = plan
        self.share = plan.get(consumer.memberid(), [])
        self.generations += 1
        consumer.assign([KafkaTopicPartition(tp.topic, tp.partition) for tp in self.share])
        if self._on_assign_cb is not None:
            self._on_assign_cb(list(self.share))

    def _handle_revoke(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        share, self.share, self.plan = self.share, [], {}
        if self._on_revoke_cb is not None and share:
            self._on_revoke_cb(share)
        consumer.unassign()

    def _handle_lost(self, consumer: Consumer, partitions: list[KafkaTopicPartition]) -> None:
        self.share, self.plan = [], {}
        consumer.unassign()

    def _group_plan(self, consumer: Consumer, native: list[TopicPartition]) -> Plan:
        from confluent_kafka import ConsumerGroupState

        admin = self._admin
        assert admin is not None  # made with the consumer, in start()
        deadline = time.monotonic() + self._describe_timeout
        reason = "no answer"
        while time.monotonic() < deadline:
            me = consumer.memberid()
            try:
                with translating("describe_consumer_groups"):
                    future = admin.describe_consumer_groups([self.group_id], request_timeout=5)
                    desc = future[self.group_id].result()
            except KafkaClientError as exc:
                reason = str(exc)
                time.sleep(0.1)
                continue
            described = {
                m.member_id: sorted(
                    TopicPartition(tp.topic, tp.partition) for tp in m.assignment.topic_partitions
                )
                for m in desc.members
            }
            if desc.state != ConsumerGroupState.STABLE or described.get(me) != native:
                # This member got its assignment after the group became Stable, so any other
                # view is a newer generation forming: it will revoke this one. Waiting here
                # would block the rejoin that generation needs, so hold nothing until then.
                self.superseded += 1
                return {}
            members = []
            for m in desc.members:
                fingerprint, meta = decode_client_id(m.client_id)
                if fingerprint != self.fingerprint:
                    raise ConfigurationError(
                        f"group {self.group_id!r}: member {m.member_id} (client.id "
                        f"{m.client_id!r}) does not run assignor {self.assignor.name!r} on "
                        f"topics {list(self.topics)}; a custom plan would overlap with it",
                        field="group.id",
                    )
                members.append(
                    Member.of(m.member_id, self.topics, rack=meta.get("rack"), metadata=meta)
                )
            partitions = sorted({tp for owned in described.values() for tp in owned})
            plan = self.assignor.assign(members, partitions)
            return check_plan(plan, members, partitions, origin=f"assignor {self.assignor.name}")
        raise KafkaTimeoutError(
            f"group {self.group_id!r}: could not describe the group within "
            f"{self._describe_timeout:.0f}s ({reason}); this member holds no partitions until "
            "the next rebalance"
        )
