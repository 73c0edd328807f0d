"""What the doctor read: plain values, and :class:`Unreadable` for what it could not read."""

from __future__ import annotations

from dataclasses import dataclass

from sdk.errors import AuthorizationError, SdkError, UnknownTopicError

__all__ = [
    "AclEntry",
    "BrokerNode",
    "ClusterFacts",
    "ConfigValue",
    "GroupFacts",
    "PartitionFacts",
    "TopicFacts",
    "Unreadable",
]


@dataclass(frozen=True)
class Unreadable:
    """A fact the doctor could not read.

    Attributes:
        reason: Why, in words (``"not authorized: needs DESCRIBE_CONFIGS on the cluster"``).
        error: The translated error, if there was one.
    """

    reason: str
    error: SdkError | None = None

    @property
    def missing(self) -> bool:
        """The broker said the resource does not exist."""
        return isinstance(self.error, UnknownTopicError)

    @property
    def denied(self) -> bool:
        """The broker refused the principal."""
        return isinstance(self.error, AuthorizationError)


@dataclass(frozen=True)
class ConfigValue:
    """One config entry: its effective value and where it comes from (``ConfigSource`` name)."""

    value: str | None
    source: str

    @property
    def own(self) -> bool:
        """Set on the resource itself (a topic or group override), not inherited."""
        return self.source in ("DYNAMIC_TOPIC_CONFIG", "GROUP_CONFIG")

    @property
    def origin(self) -> str:
        """Where the value comes from, in an operator's words."""
        return _ORIGINS.get(self.source, self.source)


_ORIGINS = {
    "DYNAMIC_TOPIC_CONFIG": "set on the topic",
    "GROUP_CONFIG": "set on the group",
    "DYNAMIC_BROKER_CONFIG": "a broker's dynamic config",
    "DYNAMIC_DEFAULT_BROKER_CONFIG": "the cluster-wide dynamic default",
    "STATIC_BROKER_CONFIG": "server.properties",
    "DEFAULT_CONFIG": "Kafka's default",
}


@dataclass(frozen=True)
class BrokerNode:
    """A broker as the cluster metadata advertises it to this profile's listener."""

    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class ClusterFacts:
    """What ``describe_cluster`` said."""

    cluster_id: str
    controller: int | None
    nodes: tuple[BrokerNode, ...]
    operations: frozenset[str] | None


@dataclass(frozen=True)
class PartitionFacts:
    """One partition: its leader (None: offline), replicas and in-sync replicas (node ids)."""

    partition: int
    leader: int | None
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


@dataclass(frozen=True)
class TopicFacts:
    """What ``describe_topics`` said about one topic."""

    name: str
    partitions: tuple[PartitionFacts, ...]
    operations: frozenset[str] | None

    @property
    def replication_factor(self) -> int:
        """The smallest replica count of its partitions."""
        return min((len(p.replicas) for p in self.partitions), default=0)


@dataclass(frozen=True)
class GroupFacts:
    """What ``describe_consumer_groups`` said about one group."""

    group_id: str
    state: str
    group_type: str
    members: tuple[str, ...]
    assignor: str
    operations: frozenset[str] | None


@dataclass(frozen=True)
class AclEntry:
    """One ACL binding, as ``describe_acls`` lists it."""

    resource_type: str
    name: str
    pattern: str
    principal: str
    host: str
    operation: str
    permission: str
