"""A real Apache Kafka (KRaft) cluster of 1 or 3 nodes on 127.0.0.1, run as subprocesses.

Every node is a combined broker+controller JVM started from the Maven-resolved jars
(:mod:`sdk.testing.jars`). The cluster supports fault injection: ``kill`` (SIGKILL), ``stop``
(clean SIGTERM), ``pause``/``resume`` (SIGSTOP/SIGCONT), ``restart`` and ``leader_of``
(:mod:`sdk.testing.cluster._faults`); network faults, with Toxiproxy before every broker, are
:mod:`sdk.testing.cluster._proxy`'s. A node's ports, files and process are a
:class:`~sdk.testing.cluster._node.Node`; its ``server.properties`` is rendered by
:mod:`sdk.testing.cluster._config`; its storage is formatted, its JVM forked (by
:mod:`sdk.testing.cluster._spawner`) and awaited by :mod:`sdk.testing.cluster._boot`.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from sdk._deprecation import RenamedAttribute, renamed_default
from sdk.testing.cluster._boot import (
    format_storage,
    java_cmd,
    launch_node,
    wait_metadata,
    wait_started,
)
from sdk.testing.cluster._boot import new_cluster_id as _new_cluster_id  # tests import it here
from sdk.testing.cluster._config import (
    check_port_free,
    free_ports,
    render_config,
)
from sdk.testing.cluster._faults import FaultInjection
from sdk.testing.cluster._node import Node, NodeState
from sdk.testing.cluster._proxy import NetworkFaults
from sdk.testing.errors import ClusterError, PortInUseError
from sdk.testing.jars import BrokerJars, resolve_broker_jars, session_kafka_version
from sdk.testing.tools import find_java

__all__ = ["LocalCluster", "NodeState"]


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class LocalCluster(FaultInjection):
    """A KRaft cluster of 1 or 3 combined broker+controller nodes on 127.0.0.1.

    Example::

        with LocalCluster(nodes=3) as cluster:
            print(cluster.bootstrap_servers)
            cluster.kill(cluster.leader_of("orders", 0))

    Args:
        nodes: 1 or 3.
        kafka_version: Apache Kafka version to resolve from Maven Central.
        workdir: Where node data and logs go; default a fresh temporary directory that
            ``close()`` removes.
        ports: Broker listener ports, one per node; default free ports chosen at start.
        broker_config: Extra ``server.properties`` entries for every node (win over defaults).
        extra_listeners: Additional client listeners, name -> security protocol (e.g.
            ``{"SASL_SSL": "SASL_SSL"}``), each on a free port per node (:meth:`listener_port`,
            :meth:`listener_bootstrap`); their ``listener.name.<name>.*`` settings go in
            ``broker_config``. The PLAINTEXT listener stays the inter-broker one.
        network_faults: Put a Toxiproxy proxy before each broker's PLAINTEXT listener, which
            advertises it; the faults are :attr:`network`'s calls (brokers talk directly).
        heap: JVM ``-Xmx`` for each node.
        start_timeout_s: Seconds to wait for the cluster to become ready.
        die_with_parent: Kill the brokers when the Python process that started them ends
            (even by SIGKILL), whichever thread started or restarted them.
        java: Path of ``java`` (default: found by :func:`sdk.testing.tools.find_java`).
        mvn: Path of ``mvn`` for the first jar resolution.
        cache_dir: Jar cache root (default :func:`sdk.testing.tools.cache_root`).
        progress: Receives progress lines (default: stderr).
        start_timeout: Deprecated name of ``start_timeout_s``, removed in 0.3.

    Attributes:
        start_duration_s: Seconds the last :meth:`start` took (None before it).
    """

    def __init__(
        self,
        nodes: int = 1,
        *,
        kafka_version: str | None = None,
        workdir: Path | str | None = None,
        ports: list[int] | None = None,
        broker_config: Mapping[str, Any] | None = None,
        extra_listeners: Mapping[str, str] | None = None,
        heap: str = "1g",
        start_timeout_s: float = 120.0,
        die_with_parent: bool = True,
        java: str | None = None,
        mvn: str | None = None,
        cache_dir: Path | None = None,
        progress: Callable[[str], None] = _progress,
        start_timeout: float | None = None,
        network_faults: bool = False,
    ) -> None:
        if nodes not in (1, 3):
            raise ClusterError(f"nodes must be 1 or 3, got {nodes}")
        if ports is not None and len(ports) != nodes:
            raise ClusterError(f"ports must list one port per node ({nodes}), got {ports}")
        self.size = nodes
        self.kafka_version = kafka_version or session_kafka_version()
        self._owns_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="kafka-sem-"))
        self._ports = ports
        self._broker_config = dict(broker_config or {})
        self._extra_listeners = dict(extra_listeners or {})
        self._heap = heap
        self._start_timeout_s = renamed_default(
            "LocalCluster", "start_timeout", start_timeout, "start_timeout_s", start_timeout_s
        )
        self._die_with_parent = die_with_parent
        self._java_arg = java
        self._mvn = mvn
        self._cache_dir = cache_dir
        self._progress = progress
        self._nodes: dict[int, Node] = {}
        self._java = ""
        self.jars: BrokerJars | None = None
        self.cluster_id = ""
        self.start_duration_s: float | None = None
        self.network: NetworkFaults | None = None
        if network_faults:
            self.network = NetworkFaults(self.workdir, die_with_parent=die_with_parent)
            self._extra_listeners.update(NetworkFaults.LISTENERS)

    start_seconds = RenamedAttribute[float | None]("start_duration_s")
    """Deprecated name of :attr:`start_duration_s`, removed in 0.3."""

    # ------------------------------------------------------------------ life cycle
    def __enter__(self) -> LocalCluster:
        if not self._nodes:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> LocalCluster:
        """Resolve jars, format storage, start every node and wait until all are ready.

        Returns:
            The cluster itself.

        Raises:
            JavaNotFoundError: No Java 17+.
            MavenError: The jars could not be resolved.
            PortInUseError: A requested port is taken (or free ports kept clashing).
            BrokerStartError: A node exited during start or was not ready in time.
        """
        started = time.monotonic()
        self._java = find_java(self._java_arg)
        self.jars = resolve_broker_jars(
            self.kafka_version, cache_dir=self._cache_dir, mvn=self._mvn, progress=self._progress
        )
        attempts = 1 if self._ports else 3
        for attempt in range(1, attempts + 1):
            try:
                self._start_once()
                break
            except PortInUseError:
                self._terminate_all(grace_s=5.0)
                if attempt == attempts:
                    raise
                self._progress("kafka-semantics: a chosen port was taken meanwhile; retrying")
            except BaseException:
                self._terminate_all(grace_s=5.0)
                raise
        self.start_duration_s = time.monotonic() - started
        self._save_state()
        self._progress(
            f"kafka-semantics: {self.size}-node Kafka {self.kafka_version} cluster ready at "
            f"{self.bootstrap_servers} in {self.start_duration_s:.1f}s"
        )
        return self

    def _start_once(self) -> None:
        ports = self._ports or free_ports(self.size)
        for port in ports:
            check_port_free(port)
        controller_ports = free_ports(self.size)
        self.cluster_id = _new_cluster_id()
        self._nodes = {}
        for index in range(self.size):
            node_id = index + 1
            directory = self.workdir / f"node-{node_id}"
            if directory.exists():
                shutil.rmtree(directory)
            directory.mkdir(parents=True)
            self._nodes[node_id] = Node(node_id, ports[index], controller_ports[index], directory)
            extra = free_ports(len(self._extra_listeners))
            self._nodes[node_id].extra_ports = dict(zip(self._extra_listeners, extra, strict=True))
        voters = ",".join(
            f"{n.node_id}@127.0.0.1:{n.controller_port}" for n in self._nodes.values()
        )
        if self.network is not None:  # before the brokers, which advertise its proxies
            self.network.start(self._nodes.values())
        for node in self._nodes.values():
            node.config_path.write_text(
                render_config(
                    node,
                    voters,
                    size=self.size,
                    extra_listeners=self._extra_listeners,
                    broker_config=self._broker_config,
                    advertised_port=self.network.port_of(node.node_id) if self.network else None,
                    kafka_version=self.kafka_version,
                )
            )
        self._format_storage()
        for node in self._nodes.values():
            self._launch(node)
        self._wait_ready(list(self._nodes.values()), log_offsets={})

    def _java_cmd(self, main_class: str, *args: str, heap: str | None = None) -> list[str]:
        assert self.jars is not None
        return java_cmd(self._java, self.jars, main_class, *args, heap=heap)

    def _format_storage(self) -> None:
        assert self.jars is not None
        format_storage(self._nodes.values(), self.cluster_id, self._java, self.jars)

    def _launch(self, node: Node) -> None:
        cmd = self._java_cmd("kafka.Kafka", str(node.config_path), heap=self._heap)
        launch_node(node, cmd, with_parent=self._die_with_parent)

    def _wait_ready(self, nodes: list[Node], log_offsets: dict[int, int]) -> None:
        deadline = time.monotonic() + self._start_timeout_s
        limit = self._start_timeout_s
        wait_started(nodes, log_offsets, deadline=deadline, timeout_s=limit, heap=self._heap)
        expected = {n.node_id for n in self._nodes.values() if n.state is NodeState.RUNNING}
        wait_metadata(self.bootstrap_servers, expected, deadline=deadline, timeout_s=limit)

    def close(self, grace_s: float = 15.0, *, grace: float | None = None) -> None:
        """Stop every node (SIGTERM, then SIGKILL of its process group) and clean up.

        Args:
            grace_s: Seconds a node gets to shut down cleanly before it is killed.
            grace: Deprecated name of ``grace_s``, removed in 0.3.
        """
        self._terminate_all(
            renamed_default("LocalCluster.close", "grace", grace, "grace_s", grace_s)
        )
        if self._owns_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        else:
            self._state_path.unlink(missing_ok=True)

    def _terminate_all(self, grace_s: float) -> None:
        live = [n for n in self._nodes.values() if n.alive()]
        for node in live:
            node.send_signal(signal.SIGCONT)
            node.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        for node in live:
            if not node.wait_exit(max(0.0, deadline - time.monotonic())):
                node.send_signal(signal.SIGKILL)
                node.wait_exit(10.0)
            node.state = NodeState.STOPPED
        if self.network is not None:
            self.network.close()

    # ------------------------------------------------------------------ nodes
    @property
    def node_ids(self) -> list[int]:
        """The node ids (1..size)."""
        return sorted(self._nodes)

    @property
    def bootstrap_servers(self) -> str:
        """Comma-separated ``host:port`` of every node's client listener (or of its proxy)."""
        if self.network is not None:
            return self.network.bootstrap_servers
        return ",".join(f"127.0.0.1:{n.port}" for n in self._nodes.values())

    def port_of(self, node_id: int) -> int:
        """Return the client listener port of a node."""
        return self._node(node_id).port

    def listener_port(self, node_id: int, name: str) -> int:
        """Return the port of a node's extra listener ``name`` (see ``extra_listeners``)."""
        return self._node(node_id).extra_ports[name]

    def listener_bootstrap(self, name: str) -> str:
        """Comma-separated ``host:port`` of every node's extra listener ``name``."""
        return ",".join(f"127.0.0.1:{n.extra_ports[name]}" for n in self._nodes.values())

    def state_of(self, node_id: int) -> NodeState:
        """Return the state of a node (STOPPED if its process has died)."""
        node = self._node(node_id)
        if node.state in (NodeState.RUNNING, NodeState.PAUSED) and not node.alive():
            node.state = NodeState.STOPPED
        return node.state

    def pids(self) -> dict[int, int | None]:
        """Return each node's process id (None if never started)."""
        return {n.node_id: n.pid for n in self._nodes.values()}

    def java_tool(
        self, main_class: str, *args: str, timeout_s: float = 120.0, timeout: float | None = None
    ) -> str:
        """Run a Kafka tool class (e.g. the console consumer) from the broker jars.

        Args:
            main_class: The tool's class, e.g. ``org.apache.kafka.tools.TransactionsCommand``.
            *args: Its command-line arguments.
            timeout_s: Seconds it may run.
            timeout: Deprecated name of ``timeout_s``, removed in 0.3.

        Returns:
            Its standard output.

        Raises:
            ClusterError: It exited non-zero.
        """
        limit = renamed_default(
            "LocalCluster.java_tool", "timeout", timeout, "timeout_s", timeout_s
        )
        proc = subprocess.run(
            self._java_cmd(main_class, *args), capture_output=True, timeout=limit, check=False
        )
        if proc.returncode != 0:
            raise ClusterError(
                f"{main_class} exited {proc.returncode}: {proc.stderr.decode(errors='replace')}"
            )
        return proc.stdout.decode(errors="replace")

    def console_read_committed(self, topic: str, *, idle_ms: int = 15_000) -> list[str]:
        """Read ``topic`` from the beginning with Kafka's Java console consumer, read_committed.

        A reader that is not the SDK nor librdkafka, for counting an exactly-once output.

        Args:
            topic: The topic to read.
            idle_ms: The console consumer stops after this long without a record.

        Returns:
            Its non-empty output lines, stripped (the record values, and any other line it
            printed).

        Raises:
            ClusterError: It exited non-zero.
        """
        text = self.java_tool(
            "org.apache.kafka.tools.consumer.ConsoleConsumer",
            "--bootstrap-server",
            self.bootstrap_servers,
            "--topic",
            topic,
            "--from-beginning",
            "--isolation-level",
            "read_committed",
            "--timeout-ms",
            str(idle_ms),
            timeout_s=120,
        )
        return [line.strip() for line in text.splitlines() if line.strip()]

    def _node(self, node_id: int) -> Node:
        try:
            return self._nodes[node_id]
        except KeyError:
            raise ClusterError(f"no node {node_id}; nodes are {self.node_ids}") from None

    # ------------------------------------------------------------------ CLI state
    @property
    def _state_path(self) -> Path:
        return self.workdir / "state.json"

    def _save_state(self) -> None:
        state = {
            "kafka_version": self.kafka_version,
            "cluster_id": self.cluster_id,
            "java": self._java,
            "network": self.network.state() if self.network else None,
            "nodes": [
                {
                    "node_id": n.node_id,
                    "port": n.port,
                    "controller_port": n.controller_port,
                    "directory": str(n.directory),
                    "pid": n.pid,
                }
                for n in self._nodes.values()
            ],
        }
        self._state_path.write_text(json.dumps(state, indent=2))

    @classmethod
    def attach(cls, workdir: Path | str) -> LocalCluster:
        """Re-open a cluster started by another process (``python -m sdk.testing.cluster up``).

        Raises:
            ClusterError: No cluster state is recorded in ``workdir``.
        """
        path = Path(workdir) / "state.json"
        try:
            state = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise ClusterError(f"no running cluster recorded in {workdir}") from exc
        cluster = cls(
            len(state["nodes"]),
            kafka_version=state["kafka_version"],
            workdir=workdir,
            die_with_parent=False,
        )
        cluster.cluster_id = state["cluster_id"]
        cluster._java = state["java"]
        cluster.jars = resolve_broker_jars(state["kafka_version"])
        for item in state["nodes"]:
            node = Node(
                item["node_id"], item["port"], item["controller_port"], Path(item["directory"])
            )
            node.pid = item["pid"]
            node.state = NodeState.RUNNING if node.alive() else NodeState.STOPPED
            cluster._nodes[node.node_id] = node
        if state.get("network"):
            cluster.network = NetworkFaults.attach(state["network"], cluster.workdir)
        return cluster

    def __iter__(self) -> Iterator[int]:
        return iter(self.node_ids)

    def __repr__(self) -> str:
        return f"LocalCluster(nodes={self.size}, bootstrap_servers={self.bootstrap_servers!r})"
