"""Create a service's missing topics with its own profile: the fix for "topic does not exist".

Brokers run with ``auto.create.topics.enable=false`` (the Kafka default for good reason: a typo
would create a topic), so a service's topics are created before it starts, by whoever owns the
cluster or by the service itself at deployment. :func:`create_topics` does it with the profile's
bootstrap servers and security settings, leaves a topic that exists alone, and waits until every
new partition has a leader.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from confluent_kafka import KafkaError
from confluent_kafka.cimpl import NewTopic

from sdk._admin import AdminApi, admin_client, admin_config
from sdk._client import translating
from sdk.doctor._subject import AnyProfile, subject_of
from sdk.errors import KafkaClientError, KafkaTimeoutError
from sdk.profiles import Guarantee, ProducerProfile

__all__ = ["create_topics"]


def create_topics(
    profile: AnyProfile | str,
    topics: Sequence[str],
    *,
    partitions: int = 1,
    replication_factor: int = -1,
    config: Mapping[str, str] | None = None,
    timeout_s: float = 30.0,
) -> list[str]:
    """Create those of ``topics`` that do not exist yet, on the cluster of ``profile``.

    Example::

        create_topics(profile, ["orders", "orders-confirmed"], partitions=6)

    Args:
        profile: A producer, consumer, processing or queue profile: where to connect and how;
            or the bootstrap servers of a plaintext cluster.
        topics: Topic names; one that exists already is left as it is.
        partitions: Partitions of each new topic.
        replication_factor: Replicas of each partition; -1 takes the brokers' default.
        config: Topic configs of each new topic, e.g. ``{"min.insync.replicas": "2"}``.
        timeout_s: Seconds to wait for the creation and for the new partitions' leaders.

    Returns:
        The names created (without those that existed).

    Raises:
        KafkaClientError: The brokers refused a topic (the error says which and why), or none
            answered (:class:`~sdk.errors.BrokerUnreachableError`).
        KafkaTimeoutError: A new partition had no leader within ``timeout_s``.
    """
    if isinstance(profile, str):
        profile = ProducerProfile(guarantee=Guarantee.AT_LEAST_ONCE, bootstrap_servers=profile)
    subject = subject_of(profile, topics)  # validates the profile and the names
    names = list(dict.fromkeys([topics] if isinstance(topics, str) else topics))
    if not names:
        return []
    admin = admin_client(
        admin_config(subject.bootstrap_servers, subject.security.render(), subject.extras)
    )
    new = [
        NewTopic(
            t,
            num_partitions=partitions,
            replication_factor=replication_factor,
            config=dict(config or {}),
        )
        for t in names
    ]
    futures = admin.create_topics(new, operation_timeout=timeout_s, request_timeout=timeout_s)
    created = []
    for name, future in futures.items():
        try:
            with translating(f"create topic {name!r} at {subject.bootstrap_servers}"):
                future.result(timeout_s)
        except KafkaClientError as exc:
            if exc.code == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            raise
        created.append(name)
    _wait_for_leaders(admin, created, partitions, time.monotonic() + timeout_s)
    return created


def _wait_for_leaders(
    admin: AdminApi, topics: Sequence[str], partitions: int, deadline: float
) -> None:
    """Wait until every partition of ``topics`` has a leader: only then can a client use it."""
    waiting = set(topics)
    while waiting:
        with translating("list topics"):
            meta = admin.list_topics(timeout=max(1.0, deadline - time.monotonic())).topics
        for name in list(waiting):
            topic = meta.get(name)
            if (
                topic is not None
                and topic.error is None
                and len(topic.partitions) == partitions
                and all(p.leader >= 0 for p in topic.partitions.values())
            ):
                waiting.discard(name)
        if not waiting:
            return
        if time.monotonic() >= deadline:
            raise KafkaTimeoutError(f"topics {sorted(waiting)} have partitions without a leader")
        time.sleep(0.1)
