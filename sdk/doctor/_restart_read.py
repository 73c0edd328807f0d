"""Reading what a rolling-restart check judges: partitions, their ISRs, min ISR, the quorum.

One snapshot (:class:`ClusterState`) is read with the admin API in two requests: the cluster
metadata (every topic, internal ones included: ``__consumer_offsets``, ``__transaction_state``,
``__share_group_state``; each partition's leader, replicas and in-sync replicas) and one
DescribeConfigs of every topic (its effective ``min.insync.replicas``: the topic's own value or
the broker default it inherits) plus one broker (its ``process.roles`` and
``controller.quorum.voters``, for the KRaft quorum). Errors of confluent-kafka are translated
through :mod:`sdk._client`.
"""

from __future__ import annotations

import concurrent.futures
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from confluent_kafka.admin._config import ConfigResource, ConfigSource
from confluent_kafka.admin._resource import ResourceType

from sdk._client import AdminApi, admin_config, timeout_error, translating
from sdk._client import admin_client as new_admin_client
from sdk._config import ClientConfig, ConfigMapping
from sdk.errors import (
    AuthorizationError,
    ConfigurationError,
    UnknownTopicError,
    from_kafka_error,
)

__all__ = [
    "AdminTarget",
    "ClusterState",
    "PartitionState",
    "admin_client",
    "admin_config_from_profile",
    "future_result",
    "read_cluster_state",
]

_log = logging.getLogger("sdk.doctor")

AdminTarget: TypeAlias = "AdminApi | str | ConfigMapping"
"""An ``AdminClient``, bootstrap servers, or a librdkafka config for one."""


@dataclass(frozen=True)
class PartitionState:
    """One partition as the metadata showed it.

    Attributes:
        topic: Topic name.
        partition: Partition number.
        leader: Node id of the leader, -1 if it has none (offline).
        replicas: The replica set, preferred leader first.
        isr: The in-sync replicas that are running brokers (a broker that is down but not
            yet out of the ISR, until the controller notices, does not count).
        min_isr: The topic's effective ``min.insync.replicas``.
    """

    topic: str
    partition: int
    leader: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    min_isr: int

    @property
    def name(self) -> str:
        """``topic[partition]``."""
        return f"{self.topic}[{self.partition}]"

    @property
    def fully_in_sync(self) -> bool:
        """Whether every replica is in the ISR (not under-replicated)."""
        return set(self.isr) == set(self.replicas)


@dataclass(frozen=True)
class ClusterState:
    """A snapshot of the cluster: what a restart check reads, and nothing it guessed.

    Attributes:
        brokers: Node ids of the running brokers (those in the metadata).
        controller_id: The active controller's node id (-1 if unknown).
        partitions: Every partition of every topic, internal topics included, sorted.
        min_isr: Each topic's effective ``min.insync.replicas``.
        min_isr_source: ``"topic"`` (set on the topic) or ``"broker"`` (the broker default).
        quorum_voters: Node ids of the KRaft controller voters (empty if not readable: a
            dynamic quorum, or no permission to describe the broker's configs).
        controller_roles: ``process.roles`` of the broker whose configs were read contains
            ``controller`` (a combined broker+controller node).
        config_broker: The broker whose configs were read (-1 if none could be).
    """

    brokers: tuple[int, ...]
    controller_id: int
    partitions: tuple[PartitionState, ...]
    min_isr: dict[str, int] = field(default_factory=dict)
    min_isr_source: dict[str, str] = field(default_factory=dict)
    quorum_voters: tuple[int, ...] = ()
    controller_roles: bool = False
    config_broker: int = -1

    @property
    def replica_brokers(self) -> frozenset[int]:
        """Every node id that holds a replica of some partition (running or not)."""
        return frozenset(r for p in self.partitions for r in p.replicas)


def admin_config_from_profile(path: str, profile: str | None) -> ClientConfig:
    """The admin connection settings of a profile: bootstrap servers and security only.

    Rendered as the profile checks render them (:func:`sdk._admin.admin_config`: the
    TLS and SASL extras are kept, every other extra left out).

    Args:
        path: YAML profile file (see :func:`sdk.profiles.load_profiles`).
        profile: Profile name; may be omitted when the file defines exactly one.

    Returns:
        A librdkafka config for an ``AdminClient`` (secrets included: only for librdkafka).

    Raises:
        ConfigurationError: The file or profile is missing or invalid.
    """
    from sdk.profiles import load_profiles

    profiles = load_profiles(path)
    if profile is None:
        if len(profiles.names) != 1:
            raise ConfigurationError(
                f"{path} defines {len(profiles.names)} profiles; name one with --profile: "
                f"{', '.join(profiles.names) or 'none'}",
                field="profile",
            )
        profile = profiles.names[0]
    errors: list[ConfigurationError] = []
    # the connection keys are shared by every side; a queue-only profile has no producer side
    for side in (profiles.producer, profiles.consumer, profiles.queue):
        try:
            built = side(profile)
        except ConfigurationError as exc:
            errors.append(exc)
            continue
        return admin_config(
            built.bootstrap_servers,
            built.security.render(),
            built.extras,
            client_id=built.client_id,
        )
    raise errors[0]


def admin_client(target: AdminTarget) -> AdminApi:
    """An ``AdminClient`` for ``target`` (returned as is if it already is one).

    librdkafka's own log lines (a refused connection to the broker that is down, say) go to
    the ``sdk.doctor`` logger, which is silent unless the application configures logging.

    Raises:
        ConfigurationError: ``target`` is empty or of the wrong type.
    """
    if isinstance(target, AdminApi):  # an AdminClient, or a stand-in with the same calls
        return target
    if isinstance(target, str):
        if not target.strip():
            raise ConfigurationError("no bootstrap servers given", field="bootstrap_servers")
        config: ClientConfig = {"bootstrap.servers": target}
    elif isinstance(target, Mapping):
        config = dict(target)
    else:
        raise ConfigurationError(
            f"expected an AdminClient, bootstrap servers or a config, got {type(target).__name__}",
            field="admin",
        )
    return new_admin_client(config, logger=_log)


def read_cluster_state(
    admin: AdminApi, *, timeout_s: float = 30.0, config_broker: int | None = None
) -> ClusterState:
    """Read one snapshot of the cluster (metadata, then every topic's min ISR).

    Args:
        admin: The admin client.
        timeout_s: Seconds for each of the two requests.
        config_broker: The broker whose ``process.roles`` and quorum voters to read (the one
            about to be restarted); another running broker if it is not running.

    Returns:
        The snapshot.

    Raises:
        BrokerUnreachableError: No broker answered.
        KafkaTimeoutError: The cluster did not answer in time.
        AuthorizationError: The principal may not describe the cluster or a topic's configs.
        KafkaClientError: Another error of the admin API.
    """
    with translating("reading the cluster metadata"):
        meta = admin.list_topics(timeout=timeout_s)
    brokers = tuple(sorted(int(b) for b in meta.brokers))
    raw: list[tuple[str, int, int, tuple[int, ...], tuple[int, ...]]] = []
    for name, topic in meta.topics.items():
        for p in topic.partitions.values():
            raw.append(
                (
                    str(name),
                    int(p.id),
                    int(p.leader),
                    tuple(int(r) for r in p.replicas),
                    # a broker that is down stays in the ISR until the controller fences it
                    tuple(sorted(int(r) for r in p.isrs if int(r) in brokers)),
                )
            )
    topics = sorted({r[0] for r in raw})
    if config_broker is None or config_broker not in brokers:
        config_broker = brokers[0] if brokers else None
    min_isr, source, broker_configs = _read_configs(admin, topics, config_broker, timeout_s)
    partitions = tuple(
        PartitionState(t, p, leader, replicas, isr, min_isr[t])
        for t, p, leader, replicas, isr in sorted(raw)
        if t in min_isr  # a topic deleted between the two reads
    )
    roles = broker_configs.get("process.roles", "")
    return ClusterState(
        brokers=brokers,
        controller_id=int(meta.controller_id),
        partitions=partitions,
        min_isr=min_isr,
        min_isr_source=source,
        quorum_voters=_voters(broker_configs.get("controller.quorum.voters", "")),
        controller_roles="controller" in roles.split(","),
        config_broker=config_broker if config_broker is not None and broker_configs else -1,
    )


def _read_configs(
    admin: AdminApi, topics: list[str], broker: int | None, timeout_s: float
) -> tuple[dict[str, int], dict[str, str], dict[str, str]]:
    """Each topic's min ISR (and where it comes from), and one broker's configs."""
    resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
    broker_resource = None
    if broker is not None:  # DescribeConfigs takes at most one broker resource per call
        broker_resource = ConfigResource(ResourceType.BROKER, str(broker))
        resources.append(broker_resource)
    if not resources:
        return {}, {}, {}
    context = "reading min.insync.replicas of every topic"
    with translating(context):
        futures = admin.describe_configs(resources, request_timeout=timeout_s)
    broker_configs: dict[str, str] = {}
    if broker_resource is not None:
        try:
            entries = future_result(futures[broker_resource], context, timeout_s)
            broker_configs = {k: str(e.value or "") for k, e in entries.items()}
        except AuthorizationError:
            _log.info("no permission to describe broker %s's configs: quorum not checked", broker)
    default = int(broker_configs.get("min.insync.replicas") or 1)
    min_isr: dict[str, int] = {}
    source: dict[str, str] = {}
    for resource in resources:
        if resource is broker_resource:
            continue
        try:
            entries = future_result(futures[resource], f"{context} ({resource.name})", timeout_s)
        except UnknownTopicError:
            continue  # deleted since the metadata was read: nothing to judge
        entry = entries.get("min.insync.replicas")
        if entry is None or entry.value is None:
            min_isr[resource.name], source[resource.name] = default, "broker"
            continue
        min_isr[resource.name] = int(entry.value)
        own = entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        source[resource.name] = "topic" if own else "broker"
    return min_isr, source, broker_configs


def future_result(future: concurrent.futures.Future[Any], context: str, timeout_s: float) -> Any:
    """``future.result()``, its errors translated."""
    try:
        with translating(context):
            return future.result(timeout=timeout_s + 5)
    except concurrent.futures.TimeoutError:
        raise from_kafka_error(
            timeout_error(f"no answer within {timeout_s:g}s"), context=context
        ) from None


def _voters(text: str) -> tuple[int, ...]:
    """Node ids of ``controller.quorum.voters`` (``1@host:port,2@host:port``)."""
    ids = []
    for voter in text.split(","):
        head = voter.strip().split("@", 1)[0]
        if head.isdigit():
            ids.append(int(head))
    return tuple(sorted(ids))
