"""The errors of the test harness (:mod:`sdk.testing`): clusters, brokers, tools.

They derive from :class:`sdk.errors.SdkError` like every error of the SDK (one exception root),
but only the harness raises them, so they live beside it::

    SdkError
    └── ClusterError                  the local test-cluster harness (sdk.testing) failed
        ├── JavaNotFoundError         no java >= 17
        ├── MavenError                mvn missing, or broker jars could not be resolved
        ├── PortInUseError            a listener port is taken
        └── BrokerStartError          a broker exited or did not become ready

Until 0.3 they can also be imported from :mod:`sdk.errors` (with a DeprecationWarning).
"""

from __future__ import annotations

from sdk.errors import SdkError

__all__ = [
    "BrokerStartError",
    "ClusterError",
    "JavaNotFoundError",
    "MavenError",
    "PortInUseError",
]


class ClusterError(SdkError):
    """The local Kafka cluster harness (``sdk.testing``) failed."""


class JavaNotFoundError(ClusterError):
    """No Java runtime of a sufficient version was found."""


class MavenError(ClusterError):
    """Maven is missing or could not resolve the broker jars."""


class PortInUseError(ClusterError):
    """A port the cluster needs is already bound by another process."""


class BrokerStartError(ClusterError):
    """A broker process exited during start or did not become ready in time."""
