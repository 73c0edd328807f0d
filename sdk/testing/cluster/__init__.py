"""Local Apache Kafka clusters for development and tests (see :class:`LocalCluster`).

Run ``python -m sdk.testing.cluster up [--nodes 3]`` to start one from the shell.
"""

from sdk.testing.cluster._local import LocalCluster, NodeState

__all__ = ["LocalCluster", "NodeState"]
