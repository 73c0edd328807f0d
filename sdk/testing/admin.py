"""Small admin helpers for tests and demos: create topics and wait until they are usable."""

from __future__ import annotations

import time
from collections.abc import Mapping

from sdk._client import translating
from sdk._deprecation import renamed_default
from sdk.errors import KafkaClientError
from sdk.testing.errors import ClusterError

__all__ = ["create_topic", "delete_topic"]


def create_topic(
    bootstrap_servers: str,
    name: str,
    partitions: int = 1,
    *,
    replication_factor: int = -1,
    config: Mapping[str, str] | None = None,
    timeout_s: float = 60.0,
    timeout: float | None = None,
) -> str:
    """Create a topic and wait until every partition has a leader.

    Args:
        bootstrap_servers: The cluster.
        name: Topic name.
        partitions: Partition count.
        replication_factor: Replicas per partition; -1 uses the broker default.
        config: Topic configs, e.g. ``{"min.insync.replicas": "2"}``.
        timeout_s: Seconds to wait.
        timeout: Deprecated name of ``timeout_s``, removed in 0.3.

    Returns:
        The topic name.

    Raises:
        ClusterError: Creation failed or the partitions got no leaders in time.
    """
    from confluent_kafka.admin import AdminClient
    from confluent_kafka.cimpl import NewTopic

    limit = renamed_default("create_topic", "timeout", timeout, "timeout_s", timeout_s)
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    new = NewTopic(
        name,
        num_partitions=partitions,
        replication_factor=replication_factor,
        config=dict(config or {}),
    )
    try:
        with translating(f"create topic {name!r}"):
            admin.create_topics([new], operation_timeout=limit)[name].result(limit)
    except KafkaClientError as exc:
        raise ClusterError(f"could not create topic {name!r}: {exc.kafka_error}") from exc
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        meta = admin.list_topics(topic=name, timeout=5).topics.get(name)
        if (
            meta is not None
            and meta.error is None
            and len(meta.partitions) == partitions
            and all(p.leader >= 0 for p in meta.partitions.values())
        ):
            return name
        time.sleep(0.1)
    raise ClusterError(f"topic {name!r} has partitions without a leader after {limit:.0f}s")


def delete_topic(
    bootstrap_servers: str, name: str, timeout_s: float = 30.0, *, timeout: float | None = None
) -> None:
    """Delete a topic and wait for the deletion.

    Args:
        bootstrap_servers: The cluster.
        name: Topic name.
        timeout_s: Seconds to wait.
        timeout: Deprecated name of ``timeout_s``, removed in 0.3.

    Raises:
        ClusterError: The broker refused the deletion.
    """
    from confluent_kafka.admin import AdminClient

    limit = renamed_default("delete_topic", "timeout", timeout, "timeout_s", timeout_s)
    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    try:
        with translating(f"delete topic {name!r}"):
            admin.delete_topics([name], operation_timeout=limit)[name].result(limit)
    except KafkaClientError as exc:
        raise ClusterError(f"could not delete topic {name!r}: {exc.kafka_error}") from exc
