"""Network faults of a :class:`~sdk.testing.cluster.LocalCluster`: Toxiproxy before every broker.

With ``LocalCluster(network_faults=True)`` one ``toxiproxy-server`` runs for the cluster and
holds one proxy per broker, ``broker-<id>``, in front of the broker's client (PLAINTEXT)
listener. The brokers advertise the proxy's address on that listener, so every client
connection (bootstrap included) runs through a proxy, while the brokers reach each other and
the controllers on listeners of their own (``INTERNAL``, ``CONTROLLER``) that no proxy sits in.
A fault cuts, slows or resets the clients' connections to one broker (or to all), never the
cluster's own traffic: no leader moves because of it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from sdk.testing.cluster._config import INTERNAL_LISTENER, free_ports
from sdk.testing.cluster._node import Node
from sdk.testing.cluster._spawner import spawn_logged
from sdk.testing.errors import ClusterError
from sdk.testing.toxiproxy import Direction, ToxiproxyClient, install_toxiproxy

__all__ = ["NetworkFaults", "Stream"]

Stream = Literal["upstream", "downstream", "both"]
"""Which direction a toxic acts on: client → broker, broker → client, or both."""


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class NetworkFaults:
    """One toxiproxy server with a proxy per broker; the calls that put faults on them.

    Every call takes ``broker``, a node id, or None for every broker. Toxics add up until
    :meth:`heal`; a second toxic of one kind on one direction replaces the first.

    Example::

        with LocalCluster(nodes=3, network_faults=True) as cluster:
            cluster.network.cut(cluster.leader_of("orders", 0))
            ...
            cluster.network.heal()                     # every broker
            cluster.network.latency(None, 300, 100)    # 300 ± 100 ms on every answer

    Args:
        workdir: Where the server's log (``toxiproxy.log``) goes.
        die_with_parent: Kill the server when the Python process that started it ends.
        toxiproxy: Path of ``toxiproxy-server`` (default: found or built by
            :func:`sdk.testing.toxiproxy.install_toxiproxy`).
        progress: Receives progress lines (a first-use build).

    Attributes:
        start_duration_s: Seconds the last :meth:`start` took (server and proxies).
    """

    LISTENERS: Mapping[str, str] = {INTERNAL_LISTENER: "PLAINTEXT"}
    """The listener the brokers talk to each other on, around the proxies."""

    def __init__(
        self,
        workdir: Path,
        *,
        die_with_parent: bool = True,
        toxiproxy: str | None = None,
        progress: Callable[[str], None] = _stderr,
    ) -> None:
        self._log_path = workdir / "toxiproxy.log"
        self._die_with_parent = die_with_parent
        self._binary = toxiproxy
        self._progress = progress
        self._process: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None
        self.api_port = 0
        self._ports: dict[int, int] = {}
        self._direct: dict[int, int] = {}
        self.start_duration_s: float | None = None

    # ------------------------------------------------------------------ life cycle
    def start(self, nodes: Iterable[Node]) -> None:
        """Start the server and one proxy per node, before the brokers (which advertise them).

        Raises:
            ClusterError: No ``toxiproxy-server`` could be found or built, or it did not start.
            PortInUseError: A chosen port was taken meanwhile (the cluster retries).
        """
        binary = self._binary or install_toxiproxy(progress=self._progress)
        started = time.monotonic()
        self._launch(binary)
        client = self.client
        nodes = list(nodes)
        self._ports, self._direct = {}, {}
        for node, port in zip(nodes, free_ports(len(nodes)), strict=True):
            client.create_proxy(
                self._name(node.node_id), f"127.0.0.1:{port}", f"127.0.0.1:{node.port}"
            )
            self._ports[node.node_id] = port
            self._direct[node.node_id] = node.extra_ports[INTERNAL_LISTENER]
        self.start_duration_s = time.monotonic() - started

    def _launch(self, binary: str) -> None:
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        for attempt in range(1, 4):
            self.api_port = free_ports(1)[0]
            self._spawn([binary, "-host", "127.0.0.1", "-port", str(self.api_port)])
            if self._wait_answering():
                return
            tail = self._log_tail()
            self.close()
            if "address already in use" not in tail or attempt == 3:
                raise ClusterError(
                    f"toxiproxy-server ({binary}) did not answer on 127.0.0.1:{self.api_port} "
                    f"within 10s. Last lines of {self._log_path}:\n{tail}"
                )

    def _spawn(self, cmd: list[str]) -> None:
        self._process = spawn_logged(cmd, self._log_path, with_parent=self._die_with_parent)
        self.pid = self._process.pid

    def _wait_answering(self) -> bool:
        client = ToxiproxyClient(f"http://127.0.0.1:{self.api_port}", timeout_s=1.0)
        deadline = time.monotonic() + 10.0
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                return False
            with contextlib.suppress(ClusterError):
                client.version()
                return True
            time.sleep(0.02)
        return False

    def _log_tail(self, lines: int = 15) -> str:
        try:
            return "\n".join(self._log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log written)"

    def close(self, grace_s: float = 5.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL of its process group); its proxies go with it."""
        pid, self.pid = self.pid, None
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while self._alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        if self._alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        if self._process is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._process.wait(5.0)
        self._process = None

    def _alive(self, pid: int) -> bool:
        if self._process is not None:
            return self._process.poll() is None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        with contextlib.suppress(OSError):  # a zombie (nobody reaps a CLI-started one) is gone
            return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
        return True

    # ------------------------------------------------------------------ addresses
    @property
    def client(self) -> ToxiproxyClient:
        """A client of the server's HTTP API (for toxics these calls do not cover)."""
        return ToxiproxyClient(f"http://127.0.0.1:{self.api_port}")

    @property
    def bootstrap_servers(self) -> str:
        """Comma-separated ``host:port`` of every broker's proxy: what clients connect to."""
        return ",".join(f"127.0.0.1:{port}" for port in self._ports.values())

    @property
    def direct_bootstrap_servers(self) -> str:
        """The brokers' own ``INTERNAL`` listeners, which no fault reaches.

        For the harness's own clients (a verifier, a progress probe) that must see the cluster
        while the clients under test are cut off; their connections stay on that listener.
        """
        return ",".join(f"127.0.0.1:{port}" for port in self._direct.values())

    def port_of(self, broker: int) -> int:
        """Return the port of a broker's proxy (what it advertises to clients)."""
        self._names(broker)
        return self._ports[broker]

    # ------------------------------------------------------------------ faults
    def cut(self, broker: int | None = None) -> None:
        """Cut clients off: close every connection and refuse new ones until :meth:`heal`."""
        for name in self._names(broker):
            self.client.set_enabled(name, False)

    def heal(self, broker: int | None = None) -> None:
        """Undo every fault: remove every toxic and accept connections again."""
        client = self.client
        for name in self._names(broker):
            for toxic in client.toxics(name):
                client.remove_toxic(name, str(toxic["name"]))
            client.set_enabled(name, True)

    def latency(
        self, broker: int | None, ms: int, jitter_ms: int = 0, *, stream: Stream = "downstream"
    ) -> None:
        """Delay every chunk of data by ``ms`` ± ``jitter_ms`` milliseconds.

        The default delays the brokers' answers only, so a round trip gets ``ms`` longer.
        """
        self._toxic(broker, "latency", {"latency": ms, "jitter": jitter_ms}, stream)

    def bandwidth(self, broker: int | None, kb_s: int, *, stream: Stream = "downstream") -> None:
        """Limit the connections to ``kb_s`` kilobytes per second each."""
        self._toxic(broker, "bandwidth", {"rate": kb_s}, stream)

    def reset_peer(
        self, broker: int | None = None, timeout_ms: int = 0, *, stream: Stream = "downstream"
    ) -> None:
        """Reset (TCP RST) each connection ``timeout_ms`` after data next flows on it.

        Until :meth:`heal`, every new connection is reset the same way as soon as it carries
        data: to reset connections every few seconds, apply and heal in turn.
        """
        self._toxic(broker, "reset_peer", {"timeout": timeout_ms}, stream)

    def timeout(self, broker: int | None = None, ms: int = 0, *, stream: Stream = "both") -> None:
        """Black-hole the connections: drop all data; close them after ``ms`` (0: never).

        Connections stay open and silent, as behind a dropped route, so clients wait for
        their request timeouts. ``stream="downstream"`` lets requests through and drops only
        the answers (a broker that applied a request whose answer never arrives). Healing
        closes the connections that were black-holed.
        """
        self._toxic(broker, "timeout", {"timeout": ms}, stream)

    def is_cut(self, broker: int) -> bool:
        """Return whether a broker's proxy is cut (disabled)."""
        name = self._names(broker)[0]
        return not self.client.proxies()[name]["enabled"]

    def toxics(self, broker: int) -> list[dict[str, Any]]:
        """Return the toxics on a broker's proxy, as the server lists them."""
        return self.client.toxics(self._names(broker)[0])

    def _toxic(
        self, broker: int | None, kind: str, attributes: Mapping[str, Any], stream: Stream
    ) -> None:
        directions: list[Direction] = ["upstream", "downstream"] if stream == "both" else [stream]
        client = self.client
        for name in self._names(broker):
            for direction in directions:
                client.add_toxic(name, kind, attributes, stream=direction)

    def _names(self, broker: int | None) -> list[str]:
        if broker is None:
            return [self._name(b) for b in self._ports]
        if broker not in self._ports:
            raise ClusterError(f"no proxy for broker {broker}; brokers are {sorted(self._ports)}")
        return [self._name(broker)]

    @staticmethod
    def _name(broker: int) -> str:
        return f"broker-{broker}"

    # ------------------------------------------------------------------ CLI state
    def state(self) -> dict[str, Any]:
        """What :meth:`attach` needs, for the cluster's state file."""
        return {
            "api_port": self.api_port,
            "pid": self.pid,
            "proxies": {str(b): p for b, p in self._ports.items()},
            "direct": {str(b): p for b, p in self._direct.items()},
        }

    @classmethod
    def attach(cls, state: Mapping[str, Any], workdir: Path) -> NetworkFaults:
        """Re-open the network faults of a cluster another process started."""
        network = cls(workdir, die_with_parent=False)
        network.api_port = int(state["api_port"])
        network.pid = state.get("pid")
        network._ports = {int(b): int(p) for b, p in state["proxies"].items()}
        network._direct = {int(b): int(p) for b, p in state["direct"].items()}
        return network

    def __repr__(self) -> str:
        return f"NetworkFaults(api=127.0.0.1:{self.api_port}, proxies={self.bootstrap_servers!r})"
