"""Choosing where a test cluster comes from.

Order: ``$KAFKA_BOOTSTRAP_SERVERS`` (an existing cluster) → testcontainers' ``KafkaContainer``
when a Docker engine answers (1 node only) → :class:`~sdk.testing.cluster.LocalCluster` from
Maven-resolved jars (what runs on machines without Docker).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

from sdk.testing.cluster import LocalCluster

__all__ = [
    "ContainerCluster",
    "ExternalCluster",
    "KafkaBackend",
    "bootstrap_servers",
    "docker_available",
    "open_cluster",
]

CONTAINER_IMAGE = "apache/kafka:4.1.0"


@runtime_checkable
class KafkaBackend(Protocol):
    """What every test cluster offers: an address and a way to let go of it."""

    @property
    def bootstrap_servers(self) -> str:
        """Comma-separated ``host:port`` list."""
        ...

    def close(self) -> None:
        """Release the cluster (stop it if this process started it)."""
        ...


class ExternalCluster:
    """A cluster someone else runs; ``close()`` leaves it alone. No fault injection."""

    def __init__(self, bootstrap_servers: str) -> None:
        self._bootstrap = bootstrap_servers

    @property
    def bootstrap_servers(self) -> str:
        """The configured bootstrap servers."""
        return self._bootstrap

    def close(self) -> None:
        """Nothing to stop."""

    def __repr__(self) -> str:
        return f"ExternalCluster({self._bootstrap!r})"


class ContainerCluster:
    """A single-node KRaft broker in a Docker container (testcontainers). No fault injection."""

    def __init__(self, image: str = CONTAINER_IMAGE) -> None:
        from testcontainers.kafka import KafkaContainer

        self._container: Any = KafkaContainer(image).with_kraft()
        self._container.start()
        self._bootstrap = str(self._container.get_bootstrap_server())

    @property
    def bootstrap_servers(self) -> str:
        """The container's mapped listener."""
        return self._bootstrap

    def close(self) -> None:
        """Stop and remove the container."""
        self._container.stop()


def docker_available() -> bool:
    """Return True if the testcontainers package is installed and a Docker engine answers."""
    if os.environ.get("KAFKA_SEMANTICS_NO_DOCKER"):
        return False
    try:
        import docker

        client = docker.from_env(timeout=3)
        client.ping()
        return True
    except Exception:
        return False


def open_cluster(nodes: int = 1) -> KafkaBackend:
    """Open the cluster the environment asks for (see module docstring).

    Args:
        nodes: 1 or 3. With ``KAFKA_BOOTSTRAP_SERVERS`` set, 3-node requests use
            ``KAFKA_BOOTSTRAP_SERVERS_3`` if set, else fall back to a local cluster.

    Returns:
        A started backend; call ``close()`` when done.
    """
    env = "KAFKA_BOOTSTRAP_SERVERS" if nodes == 1 else "KAFKA_BOOTSTRAP_SERVERS_3"
    if os.environ.get(env):
        return ExternalCluster(os.environ[env])
    if nodes == 1 and docker_available():
        return ContainerCluster()
    return LocalCluster(nodes).start()


@contextlib.contextmanager
def bootstrap_servers(nodes: int = 1) -> Iterator[str]:
    """Yield the bootstrap servers of :func:`open_cluster`'s cluster; close it afterwards.

    For examples and scripts: ``KAFKA_BOOTSTRAP_SERVERS`` if set, else a Docker broker if an
    engine answers, else an embedded :class:`~sdk.testing.cluster.LocalCluster`.

    Example::

        with bootstrap_servers() as bs:
            producer = Producer(ProducerProfile(guarantee="at_least_once", bootstrap_servers=bs))
    """
    backend = open_cluster(nodes)
    try:
        yield backend.bootstrap_servers
    finally:
        backend.close()
