"""Bringing broker JVMs up: the java command line, storage formatting, the fork, the readiness wait.

:class:`~sdk.testing.cluster.LocalCluster` runs these to start its nodes and to restart one
(:mod:`sdk.testing.cluster._faults`); each takes what it needs as arguments, so the cluster
keeps its state and these keep the mechanics of one start.
"""

from __future__ import annotations

import base64
import subprocess
import time
import uuid
from collections.abc import Iterable

from sdk.testing.cluster._node import Node, NodeState
from sdk.testing.cluster._spawner import spawn_logged
from sdk.testing.errors import BrokerStartError, PortInUseError
from sdk.testing.jars import BrokerJars

__all__ = [
    "format_storage",
    "java_cmd",
    "launch_node",
    "new_cluster_id",
    "wait_metadata",
    "wait_started",
]

_STARTED = "Kafka Server started"
_PORT_CLASH = ("Address already in use", "BindException")


def new_cluster_id() -> str:
    """A random KRaft cluster id that does not start with "-".

    kafka-storage's argument parser takes an id like "-Xb3..." for an option (1 start in 64
    failed this way); Kafka's own ``Uuid.randomUuid()`` avoids such ids for the same reason.
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def java_cmd(
    java: str, jars: BrokerJars, main_class: str, *args: str, heap: str | None = None
) -> list[str]:
    """The command line that runs ``main_class`` from the broker jars."""
    cmd = [java]
    if heap:
        cmd += [f"-Xmx{heap}", "-Xms128m", "-XX:+UseG1GC"]
    return [
        *cmd,
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={jars.log4j_config}",
        "-cp",
        jars.classpath,
        main_class,
        *args,
    ]


def format_storage(nodes: Iterable[Node], cluster_id: str, java: str, jars: BrokerJars) -> None:
    """Format every node's storage for ``cluster_id``, the nodes in parallel.

    Raises:
        BrokerStartError: kafka-storage failed for a node.
    """
    procs = [
        (
            node,
            subprocess.Popen(
                java_cmd(
                    java,
                    jars,
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    cluster_id,
                    "-c",
                    str(node.config_path),
                ),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
            ),
        )
        for node in nodes
    ]
    for node, proc in procs:
        out, _ = proc.communicate(timeout=120)
        if proc.returncode != 0:
            raise BrokerStartError(
                f"Formatting the storage of node {node.node_id} failed (exit "
                f"{proc.returncode}). Check that {node.directory} is writable and that the "
                f"broker_config overrides are valid. Output:\n{out.decode(errors='replace')}"
            )


def launch_node(node: Node, cmd: list[str], *, with_parent: bool) -> None:
    """Fork the node's JVM (``cmd``) in its own session, its output appended to its log."""
    node.process = spawn_logged(cmd, node.log_path, with_parent=with_parent)
    node.pid = node.process.pid
    node.state = NodeState.RUNNING


def wait_started(
    nodes: list[Node],
    log_offsets: dict[int, int],
    *,
    deadline: float,
    timeout_s: float,
    heap: str,
) -> None:
    """Wait until every node's log (after its offset) says it started.

    Raises:
        PortInUseError: A node could not bind its ports.
        BrokerStartError: A node exited, or not all had started by ``deadline``.
    """
    pending = {node.node_id: node for node in nodes}
    while pending:
        for node_id, node in list(pending.items()):
            try:
                with open(node.log_path, "rb") as f:
                    f.seek(log_offsets.get(node_id, 0))
                    text = f.read().decode(errors="replace")
            except OSError:
                text = ""
            if any(marker in text for marker in _PORT_CLASH):
                raise PortInUseError(
                    f"Node {node_id} could not bind its ports ({node.port}, "
                    f"{node.controller_port}): another process took them. Pick other ports "
                    f"or let the cluster choose free ones. Log tail:\n{node.log_tail()}"
                )
            if _STARTED in text:
                del pending[node_id]
            elif not node.alive():
                node.state = NodeState.STOPPED
                raise BrokerStartError(
                    f"Kafka node {node_id} exited during start (exit code "
                    f"{node.process.returncode if node.process else '?'}). Its log says why; "
                    f"common causes are bad broker_config entries, a full disk or too little "
                    f"memory for -Xmx{heap}. Last lines of {node.log_path}:\n"
                    f"{node.log_tail()}"
                )
        if pending and time.monotonic() > deadline:
            tails = "\n".join(f"--- node {n.node_id}:\n{n.log_tail(15)}" for n in pending.values())
            raise BrokerStartError(
                f"Kafka node(s) {sorted(pending)} did not log '{_STARTED}' within "
                f"{timeout_s:.0f}s. The machine may be overloaded (raise "
                f"start_timeout_s) or the node is stuck; log tails:\n{tails}"
            )
        if pending:
            time.sleep(0.2)


def wait_metadata(
    bootstrap_servers: str, expected: set[int], *, deadline: float, timeout_s: float
) -> None:
    """Wait until the cluster's metadata lists every ``expected`` broker.

    Raises:
        BrokerStartError: It did not by ``deadline``.
    """
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap_servers})
    seen: set[int] = set()
    while time.monotonic() < deadline:
        try:
            seen = set(admin.list_topics(timeout=5).brokers)
        except Exception:
            seen = set()
        if expected <= seen:
            return
        time.sleep(0.3)
    raise BrokerStartError(
        f"The cluster's metadata lists brokers {sorted(seen)}, expected {sorted(expected)} "
        f"within {timeout_s:.0f}s."
    )
