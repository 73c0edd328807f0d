"""pytest plugin with Kafka fixtures; opt-in, installing the SDK registers nothing.

Install ``kafka-semantics[testing]`` and name the plugin in the rootdir's ``conftest.py``::

    pytest_plugins = ["sdk.testing.pytest_plugin"]

Fixtures:
    kafka_cluster: session-scoped 1-node cluster (see :func:`sdk.testing.backends.open_cluster`).
    kafka_cluster3: session-scoped 3-node cluster (replication 3, min.insync.replicas 2).
    kafka_cluster3_proxied: session-scoped 3-node :class:`LocalCluster` whose clients connect
        through Toxiproxy (``network_faults=True``: ``cluster.network.cut(1)``...); skips the
        test when no ``toxiproxy-server`` is installed.
    make_topic: factory ``make_topic(partitions=1, *, cluster=None, replication_factor=-1,
        config=None) -> name`` creating a uuid-named topic (on ``kafka_cluster`` by default).
    make_group: factory ``make_group(prefix="g") -> name`` returning a uuid-named group id.
    postgres: session-scoped :class:`~sdk.testing.postgres.PostgresServer`, started on first use.
    postgres_uri: URI of a fresh uuid-named database on ``postgres``, dropped after the test.
    schema_registry_server: session-scoped :class:`~sdk.testing.registry.SchemaRegistryServer`
        (Apicurio Registry, Java 21+), started on first use; ``stop()``/``start()`` make an
        outage on the same port, schemas kept.
    schema_registry: its Confluent-compatible URL (``http://127.0.0.1:<port>/apis/ccompat/v7``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest

from sdk.testing.admin import create_topic
from sdk.testing.backends import KafkaBackend, open_cluster
from sdk.testing.cluster import LocalCluster
from sdk.testing.postgres import PostgresServer
from sdk.testing.registry import SchemaRegistryServer
from sdk.testing.toxiproxy import INSTALL_HINT, find_toxiproxy

__all__ = [
    "kafka_cluster",
    "kafka_cluster3",
    "kafka_cluster3_proxied",
    "make_group",
    "make_topic",
    "postgres",
    "postgres_uri",
    "require_local",
    "schema_registry",
    "schema_registry_server",
]


def require_local(cluster: KafkaBackend) -> LocalCluster:
    """Skip the test unless ``cluster`` is a :class:`LocalCluster` (fault injection needs it)."""
    if not isinstance(cluster, LocalCluster):
        pytest.skip(f"fault injection needs a LocalCluster, not {cluster!r}")
    return cluster


@pytest.fixture(scope="session")
def kafka_cluster() -> Iterator[KafkaBackend]:
    """A 1-node Kafka cluster shared by the whole test session."""
    cluster = open_cluster(1)
    yield cluster
    cluster.close()


@pytest.fixture(scope="session")
def kafka_cluster3() -> Iterator[KafkaBackend]:
    """A 3-node Kafka cluster shared by the whole test session."""
    cluster = open_cluster(3)
    yield cluster
    cluster.close()


@pytest.fixture(scope="session")
def kafka_cluster3_proxied() -> Iterator[LocalCluster]:
    """A 3-node local cluster with a Toxiproxy proxy before each broker, shared by the session.

    Always a :class:`LocalCluster` (``KAFKA_BOOTSTRAP_SERVERS_3`` does not apply): the proxies
    are the harness's. Started only when a test asks for it.
    """
    if find_toxiproxy() is None:
        pytest.skip(f"network faults need toxiproxy-server: {INSTALL_HINT}")
    with LocalCluster(3, network_faults=True) as cluster:
        yield cluster


@pytest.fixture
def make_topic(request: pytest.FixtureRequest) -> Callable[..., str]:
    """Factory creating uuid-named topics; the 1-node cluster is started only if used."""

    def factory(
        partitions: int = 1,
        *,
        cluster: KafkaBackend | None = None,
        replication_factor: int = -1,
        config: Mapping[str, str] | None = None,
        prefix: str = "t",
    ) -> str:
        target: Any = cluster or request.getfixturevalue("kafka_cluster")
        name = f"{prefix}-{uuid.uuid4().hex[:12]}"
        return create_topic(
            target.bootstrap_servers,
            name,
            partitions,
            replication_factor=replication_factor,
            config=config,
        )

    return factory


@pytest.fixture
def make_group() -> Callable[..., str]:
    """Factory returning uuid-named consumer group ids."""

    def factory(prefix: str = "g") -> str:
        return f"{prefix}-{uuid.uuid4().hex[:12]}"

    return factory


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL server shared by the whole test session (only sessions that ask start one)."""
    with PostgresServer() as server:
        yield server


@pytest.fixture
def postgres_uri(postgres: PostgresServer) -> Iterator[str]:
    """URI of a fresh database for this test alone, on the session's ``postgres`` server."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    uri = postgres.create_database(name)
    yield uri
    # a test may have stopped the server on purpose; its database went with it then
    if postgres.is_running():
        postgres.drop_database(name)


@pytest.fixture(scope="session")
def schema_registry_server() -> Iterator[SchemaRegistryServer]:
    """A schema registry shared by the session (only sessions that ask start one)."""
    with SchemaRegistryServer() as server:
        yield server


@pytest.fixture
def schema_registry(schema_registry_server: SchemaRegistryServer) -> str:
    """The session registry's URL, running (a test that stopped it on purpose left it so)."""
    schema_registry_server.start()  # a no-op when it runs
    return schema_registry_server.url
