"""The admin client: the calls the SDK makes on it, and the one place it is built.

Every admin client of the SDK (the doctor's checks, the rolling-restart commands, the share
group's configs, the partition router's metadata, the group-aware assignors, Spark's offset
ranges and progress topic) is made by :func:`admin_client`, most from a profile's connection
settings (:func:`admin_config`): the bootstrap servers, the security settings and the extra
keys that decide whether a connection works at all (``security.*``, ``ssl.*``, ``sasl.*``,
``enable.ssl.*``: :func:`connection_keys`). The partition router's admin client takes the
producer's whole config, as it always has. A slot that holds an admin client is typed by
:class:`AdminApi`, which ``confluent_kafka.admin.AdminClient`` satisfies (its calls are
translated at the seam, :mod:`sdk._client`, like every other client's).
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from confluent_kafka import (
    ElectionType,
    IsolationLevel,
    KafkaError,
    TopicCollection,
    TopicPartition,
)

from sdk._config import ClientConfig, ConfigMapping, ConfigValue, LogSink

if TYPE_CHECKING:  # confluent-kafka's package does not re-export them for type checkers
    from confluent_kafka.admin._acl import AclBinding, AclBindingFilter
    from confluent_kafka.admin._cluster import DescribeClusterResult
    from confluent_kafka.admin._config import ConfigEntry, ConfigResource
    from confluent_kafka.admin._group import ConsumerGroupDescription
    from confluent_kafka.admin._listoffsets import ListOffsetsResultInfo, OffsetSpec
    from confluent_kafka.admin._metadata import ClusterMetadata
    from confluent_kafka.admin._topic import TopicDescription
    from confluent_kafka.cimpl import NewPartitions, NewTopic

__all__ = [
    "CONNECTION_PREFIXES",
    "AdminApi",
    "LogSink",
    "admin_client",
    "admin_config",
    "client_config",
    "connection_keys",
]

CONNECTION_PREFIXES = ("security.", "ssl.", "sasl.", "enable.ssl.")
"""The librdkafka keys (by prefix) that decide whether a connection works: TLS and SASL."""

Future = concurrent.futures.Future


@runtime_checkable
class AdminApi(Protocol):
    """The calls the SDK makes on a ``confluent_kafka.admin.AdminClient``.

    Each request returns futures at once; their results raise ``KafkaException``, so a caller
    waits on them inside :func:`sdk._client.translating`.
    """

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadata:
        """Cluster metadata (of one topic, or of all)."""
        ...

    def describe_cluster(
        self, *, include_authorized_operations: bool = ..., request_timeout: float = ...
    ) -> Future[DescribeClusterResult]:
        """The brokers, the controller and (if asked) the authorized operations."""
        ...

    def describe_topics(
        self,
        topics: TopicCollection,
        *,
        include_authorized_operations: bool = ...,
        request_timeout: float = ...,
    ) -> dict[str, Future[TopicDescription]]:
        """Partitions, replicas and (if asked) authorized operations, per topic."""
        ...

    def describe_configs(
        self, resources: list[ConfigResource], *, request_timeout: float = ...
    ) -> dict[ConfigResource, Future[dict[str, ConfigEntry]]]:
        """The configs of brokers, topics or groups."""
        ...

    def create_partitions(
        self, new_partitions: list[NewPartitions], *, request_timeout: float = ...
    ) -> dict[str, Future[None]]:
        """Grow topics to a new partition count."""
        ...

    def create_topics(
        self,
        new_topics: list[NewTopic],
        *,
        operation_timeout: float = ...,
        request_timeout: float = ...,
    ) -> dict[str, Future[None]]:
        """Create topics (``sdk.doctor.create_topics``)."""
        ...

    def incremental_alter_configs(
        self, resources: list[ConfigResource], *, request_timeout: float = ...
    ) -> dict[ConfigResource, Future[None]]:
        """Set or delete some configs of each resource, leaving the others as they are."""
        ...

    def describe_consumer_groups(
        self,
        group_ids: list[str],
        *,
        include_authorized_operations: bool = ...,
        request_timeout: float = ...,
    ) -> dict[str, Future[ConsumerGroupDescription]]:
        """The members and assignments of consumer groups."""
        ...

    def describe_acls(
        self, acl_binding_filter: AclBindingFilter, *, request_timeout: float = ...
    ) -> Future[list[AclBinding]]:
        """The ACLs that match a filter."""
        ...

    def list_offsets(
        self,
        topic_partition_offsets: dict[TopicPartition, OffsetSpec],
        *,
        isolation_level: IsolationLevel = ...,
        request_timeout: float = ...,
    ) -> dict[TopicPartition, Future[ListOffsetsResultInfo]]:
        """The earliest, latest or by-timestamp offset of each partition."""
        ...

    def elect_leaders(
        self,
        election_type: ElectionType,
        partitions: list[TopicPartition] | None = None,
        *,
        request_timeout: float = ...,
        operation_timeout: float = ...,
    ) -> Future[dict[TopicPartition, KafkaError | None]]:
        """Run a (preferred or unclean) leader election; per partition, its error if any."""
        ...

    def poll(self, timeout: float = -1) -> int:
        """Serve the callbacks (``error_cb``, ``logger``)."""
        ...


def connection_keys(config: Mapping[str, ConfigValue]) -> ClientConfig:
    """The keys of ``config`` that decide whether a connection works (TLS and SASL)."""
    return {k: v for k, v in config.items() if k.startswith(CONNECTION_PREFIXES)}


def admin_config(
    bootstrap_servers: str,
    security: ConfigMapping,
    extras: ConfigMapping,
    *,
    client_id: str | None = None,
) -> ClientConfig:
    """The config of an admin client that connects as a profile's clients do.

    Args:
        bootstrap_servers: The profile's bootstrap servers.
        security: Its rendered security settings (``SecurityProfile.render()``; they win).
        extras: Its extra librdkafka keys; only :func:`connection_keys` are kept.
        client_id: The ``client.id`` to give the admin client (default: librdkafka's).

    Returns:
        A librdkafka config (secrets revealed: only for librdkafka).
    """
    config: ClientConfig = {"bootstrap.servers": bootstrap_servers}
    if client_id:
        config["client.id"] = client_id
    config.update(connection_keys(extras))
    config.update(security)
    return config


def admin_client(
    config: ConfigMapping,
    *,
    logger: LogSink | None = None,
    error_cb: Callable[[KafkaError], None] | None = None,
) -> AdminApi:
    """An ``AdminClient`` (the one place the SDK makes one).

    Args:
        config: Its librdkafka config (:func:`admin_config`); used as given.
        logger: Where librdkafka's log lines go, unless ``config`` says (default: librdkafka's
            own, on stderr).
        error_cb: Gets each client-level error (a refused login shows only there).

    Returns:
        The client; nothing is connected before its first request.

    Raises:
        KafkaException: librdkafka refused a key or a value.
    """
    from confluent_kafka.admin import AdminClient

    # confluent-kafka's stubs type AdminClient's config without the callbacks and the logger
    # that librdkafka takes (and client_config adds): the one untyped config of the SDK
    conf: dict[str, Any] = client_config(config, logger=logger, error_cb=error_cb)
    client: AdminApi = AdminClient(conf)
    return client


def client_config(
    config: ConfigMapping,
    *,
    logger: LogSink | None = None,
    error_cb: Callable[[KafkaError], None] | None = None,
) -> ClientConfig:
    """The config :func:`admin_client` gives librdkafka (the callbacks added)."""
    conf = dict(config)
    if logger is not None:
        conf.setdefault("logger", logger)
    if error_cb is not None:
        conf["error_cb"] = error_cb
    return conf
