"""Fault injection of a :class:`~sdk.testing.cluster.LocalCluster`: crash, stop, freeze, restart.

Every fault is a signal to the node's process group (the broker JVM runs in its own session):
``kill`` SIGKILL, ``stop`` SIGTERM, ``pause``/``resume`` SIGSTOP/SIGCONT. ``leader_of`` finds
the node to hit.
"""

from __future__ import annotations

import contextlib
import signal
import time
from pathlib import Path
from typing import TYPE_CHECKING

from sdk._deprecation import renamed_default
from sdk.testing.cluster._node import Node, NodeState
from sdk.testing.errors import ClusterError

__all__ = ["FaultInjection"]


class FaultInjection:
    """Mixin of :class:`~sdk.testing.cluster.LocalCluster`: its fault-injection methods.

    A mixin because these are the cluster's own public methods. What it needs from the class
    is declared below and defined by ``LocalCluster``.
    """

    if TYPE_CHECKING:

        @property
        def bootstrap_servers(self) -> str:
            """Comma-separated ``host:port`` of every node's client listener."""

        def _node(self, node_id: int) -> Node: ...

        def _launch(self, node: Node) -> None: ...

        def _wait_ready(self, nodes: list[Node], log_offsets: dict[int, int]) -> None: ...

        def _save_state(self) -> None: ...

    def kill(self, node_id: int) -> None:
        """SIGKILL a node's process group (a crash: no controlled shutdown, no flush)."""
        node = self._node(node_id)
        node.send_signal(signal.SIGKILL)
        node.wait_exit(30.0)
        node.state = NodeState.STOPPED

    def stop(self, node_id: int, timeout_s: float = 60.0, *, timeout: float | None = None) -> None:
        """Stop a node cleanly (SIGTERM: controlled shutdown), SIGKILL after ``timeout_s``.

        Args:
            node_id: The node.
            timeout_s: Seconds it gets to shut down before it is killed.
            timeout: Deprecated name of ``timeout_s``, removed in 0.3.
        """
        limit = renamed_default("LocalCluster.stop", "timeout", timeout, "timeout_s", timeout_s)
        node = self._node(node_id)
        node.send_signal(signal.SIGCONT)  # a paused node would never see the SIGTERM
        node.send_signal(signal.SIGTERM)
        if not node.wait_exit(limit):
            node.send_signal(signal.SIGKILL)
            node.wait_exit(10.0)
        node.state = NodeState.STOPPED

    def pause(self, node_id: int) -> None:
        """Freeze a node with SIGSTOP (it keeps its sockets but answers nothing)."""
        node = self._node(node_id)
        node.send_signal(signal.SIGSTOP)
        node.state = NodeState.PAUSED
        deadline = time.monotonic() + 5.0  # SIGSTOP is asynchronous: wait until it took hold
        while time.monotonic() < deadline:
            try:
                if Path(f"/proc/{node.pid}/stat").read_text().split()[2] in ("T", "t"):
                    return
            except OSError:
                return
            time.sleep(0.01)

    def resume(self, node_id: int) -> None:
        """Unfreeze a paused node with SIGCONT."""
        node = self._node(node_id)
        node.send_signal(signal.SIGCONT)
        node.state = NodeState.RUNNING

    def restart(self, node_id: int) -> None:
        """Start a node again on its old ports and data (stopping it cleanly first if running).

        Raises:
            BrokerStartError: It did not become ready again.
        """
        node = self._node(node_id)
        if node.alive():
            self.stop(node_id)
        # only what the new process logs counts: the old log already says "started"
        offset = node.log_path.stat().st_size if node.log_path.exists() else 0
        self._launch(node)
        self._wait_ready([node], log_offsets={node_id: offset})
        self._save_state()

    def leader_of(
        self,
        topic: str,
        partition: int = 0,
        timeout_s: float = 10.0,
        *,
        exclude: int | None = None,
        timeout: float | None = None,
    ) -> int:
        """Return the node id currently leading ``topic``/``partition``.

        Args:
            topic: Topic name.
            partition: Partition number.
            timeout_s: Seconds to wait for a (new) leader.
            exclude: Wait until the leader is not this node (e.g. one just killed: metadata
                names it until the controller notices, ``broker.session.timeout.ms``).
            timeout: Deprecated name of ``timeout_s``, removed in 0.3.

        Raises:
            ClusterError: The partition has no leader (or the topic is unknown) within
                ``timeout_s``.
        """
        from confluent_kafka.admin import AdminClient

        limit = renamed_default(
            "LocalCluster.leader_of", "timeout", timeout, "timeout_s", timeout_s
        )
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        deadline = time.monotonic() + limit
        while True:
            with contextlib.suppress(Exception):
                meta = admin.list_topics(topic=topic, timeout=5).topics[topic]
                leader = meta.partitions[partition].leader
                if meta.error is None and leader >= 0 and leader != exclude:
                    return int(leader)
            if time.monotonic() > deadline:
                raise ClusterError(f"{topic}[{partition}] has no leader after {limit:.0f}s")
            time.sleep(0.2)
