"""Toxiproxy in the harness: finding or building the server, its API, the cluster's fault calls.

The fault calls run against a real ``toxiproxy-server`` in front of a TCP echo server, without
Kafka; the tests that need the server skip when none is installed (``./dev.sh setup`` builds it).
"""

from __future__ import annotations

import socket
import socketserver
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sdk.testing.cluster._config import INTERNAL_LISTENER, render_config
from sdk.testing.cluster._node import Node
from sdk.testing.cluster._proxy import NetworkFaults
from sdk.testing.errors import ClusterError, PortInUseError
from sdk.testing.toxiproxy import (
    INSTALL_HINT,
    TOXIPROXY_VERSION,
    ToxiproxyClient,
    find_toxiproxy,
    install_toxiproxy,
)

needs_toxiproxy = pytest.mark.skipif(
    find_toxiproxy() is None, reason=f"needs toxiproxy-server: {INSTALL_HINT}"
)


def _script(path: Path, body: str) -> str:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.fixture
def no_toxiproxy(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An environment with no toxiproxy-server and no Go: empty cache, empty PATH."""
    monkeypatch.delenv("KSEM_TOXIPROXY", raising=False)
    monkeypatch.delenv("GOROOT", raising=False)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    return tmp_path / "cache"


def test_a_bad_ksem_toxiproxy_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KSEM_TOXIPROXY", "/nonexistent/toxi")
    with pytest.raises(ClusterError, match="KSEM_TOXIPROXY names '/nonexistent/toxi'"):
        find_toxiproxy()


def test_missing_go_names_the_fix(no_toxiproxy: Path) -> None:
    assert find_toxiproxy(cache_dir=no_toxiproxy) is None
    with pytest.raises(ClusterError) as info:
        install_toxiproxy(cache_dir=no_toxiproxy, go=str(no_toxiproxy / "no-go"))
    assert "install Go ≥ 1.22 or put toxiproxy-server on PATH / set KSEM_TOXIPROXY" in str(
        info.value
    )


def test_an_old_go_is_refused(no_toxiproxy: Path, tmp_path: Path) -> None:
    go = _script(tmp_path / "go", 'echo "go1.20.3"')
    with pytest.raises(ClusterError, match=r"go1\.20\.3, too old"):
        install_toxiproxy(cache_dir=no_toxiproxy, go=go)


def test_a_build_goes_into_the_cache_once(no_toxiproxy: Path, tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    # a stand-in for go: 'env GOVERSION' answers, 'install' writes $GOBIN/server and logs
    go = _script(
        tmp_path / "go",
        'if [ "$1" = env ]; then echo go1.26.0; exit 0; fi\n'
        f'echo "$@ $CGO_ENABLED $GOTOOLCHAIN" >> {calls}\n'
        'printf "#!/bin/sh\\necho fake" > "$GOBIN/server"; /bin/chmod +x "$GOBIN/server"',
    )
    lines: list[str] = []
    first = install_toxiproxy(cache_dir=no_toxiproxy, go=go, progress=lines.append)
    second = install_toxiproxy(cache_dir=no_toxiproxy, go=go, progress=lines.append)
    assert first == second == str(no_toxiproxy / f"toxiproxy-{TOXIPROXY_VERSION}/toxiproxy-server")
    assert calls.read_text().splitlines() == [
        f"install github.com/Shopify/toxiproxy/v2/cmd/server@{TOXIPROXY_VERSION} 0 local"
    ]
    assert find_toxiproxy(cache_dir=no_toxiproxy) == first
    assert len(lines) == 2  # "building ..." and "built in ..." once


def test_a_failed_build_shows_go_output(no_toxiproxy: Path, tmp_path: Path) -> None:
    go = _script(
        tmp_path / "go",
        'if [ "$1" = env ]; then echo go1.26.0; exit 0; fi\necho "dial tcp: no route" >&2; exit 1',
    )
    with pytest.raises(ClusterError, match=r"(?s)exit code 1.*dial tcp: no route"):
        install_toxiproxy(cache_dir=no_toxiproxy, go=go, progress=lambda _: None)
    assert find_toxiproxy(cache_dir=no_toxiproxy) is None


def test_render_config_advertises_the_proxy_and_keeps_brokers_direct(tmp_path: Path) -> None:
    node = Node(2, 9092, 9093, tmp_path, extra_ports={INTERNAL_LISTENER: 9094})
    text = render_config(
        node,
        "2@127.0.0.1:9093",
        size=3,
        extra_listeners=NetworkFaults.LISTENERS,
        broker_config={},
        advertised_port=19092,
    )
    config = dict(line.split("=", 1) for line in text.splitlines())
    assert config["listeners"] == (
        "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093,INTERNAL://127.0.0.1:9094"
    )
    assert config["advertised.listeners"] == (
        "PLAINTEXT://127.0.0.1:19092,INTERNAL://127.0.0.1:9094"
    )
    assert config["inter.broker.listener.name"] == "INTERNAL"
    assert config["listener.security.protocol.map"].endswith(",INTERNAL:PLAINTEXT")


# ---------------------------------------------------------------------- against a real server
class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(4096):
            self.request.sendall(data)


@pytest.fixture
def echo_port() -> Iterator[int]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    yield int(server.server_address[1])
    server.shutdown()
    server.server_close()


@pytest.fixture
def network(tmp_path: Path, echo_port: int) -> Iterator[NetworkFaults]:
    """Proxies for two "brokers" that are both the echo server."""
    faults = NetworkFaults(tmp_path)
    nodes = [
        Node(n, echo_port, 0, tmp_path, extra_ports={INTERNAL_LISTENER: echo_port}) for n in (1, 2)
    ]
    faults.start(nodes)
    yield faults
    faults.close()


def _connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=5)


def _round_trip(sock: socket.socket, payload: bytes = b"ping") -> float:
    started = time.monotonic()
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("closed")
        got += chunk
    assert got == payload
    return time.monotonic() - started


@needs_toxiproxy
def test_start_is_cheap_and_the_proxies_pass_data(network: NetworkFaults) -> None:
    assert network.start_duration_s is not None and network.start_duration_s < 2.0
    ports = [int(a.rsplit(":", 1)[1]) for a in network.bootstrap_servers.split(",")]
    assert ports == [network.port_of(1), network.port_of(2)]
    for port in ports:
        with _connect(port) as sock:
            assert _round_trip(sock) < 0.5


@needs_toxiproxy
def test_cut_closes_and_refuses_until_heal(network: NetworkFaults) -> None:
    sock = _connect(network.port_of(1))
    _round_trip(sock)
    network.cut(1)
    assert network.is_cut(1) and not network.is_cut(2)
    with pytest.raises((ConnectionError, OSError)):
        _round_trip(sock)  # the open connection was closed
    with pytest.raises(ConnectionRefusedError):
        _connect(network.port_of(1))
    with _connect(network.port_of(2)) as other:  # the other broker is untouched
        _round_trip(other)
    network.heal(1)
    with _connect(network.port_of(1)) as sock2:
        _round_trip(sock2)
    sock.close()


@needs_toxiproxy
def test_latency_on_answers_then_heal(network: NetworkFaults) -> None:
    network.latency(None, 300, 0)
    network.latency(None, 200, 0)  # the same toxic again: replaced, not added
    assert [t["attributes"]["latency"] for t in network.toxics(2)] == [200]
    with _connect(network.port_of(2)) as sock:
        assert 0.18 < _round_trip(sock) < 1.0
        network.heal()
        assert network.toxics(2) == []
        assert _round_trip(sock) < 0.15


@needs_toxiproxy
def test_reset_peer_resets_connections_that_carry_data(network: NetworkFaults) -> None:
    network.reset_peer(1)
    with _connect(network.port_of(1)) as sock, pytest.raises(ConnectionResetError):
        _round_trip(sock)
        _round_trip(sock)  # the RST may land on the next call
    network.heal(1)
    with _connect(network.port_of(1)) as sock:
        _round_trip(sock)


@needs_toxiproxy
def test_timeout_on_answers_drops_them_and_heal_closes_the_connection(
    network: NetworkFaults,
) -> None:
    sock = _connect(network.port_of(1))
    network.timeout(1, 0, stream="downstream")
    sock.settimeout(1.0)
    with pytest.raises(TimeoutError):
        _round_trip(sock)  # the request went through; its answer never comes
    network.heal(1)
    sock.settimeout(5.0)
    assert sock.recv(4096) == b""  # healing closed the black-holed connection
    sock.close()
    with _connect(network.port_of(1)) as fresh:
        _round_trip(fresh)


@needs_toxiproxy
def test_client_errors_are_cluster_errors(network: NetworkFaults, echo_port: int) -> None:
    with pytest.raises(ClusterError, match="no proxy for broker 7"):
        network.cut(7)
    client = network.client
    assert client.version()  # plain text, not JSON
    with pytest.raises(ClusterError, match="404"):
        client.toxics("nope")
    with pytest.raises(PortInUseError):
        client.create_proxy("clash", f"127.0.0.1:{network.port_of(1)}", f"127.0.0.1:{echo_port}")
    client.delete_proxy("nope")  # missing: no error
    with pytest.raises(ClusterError, match="did not answer"):
        ToxiproxyClient("http://127.0.0.1:9", timeout_s=1).version()


@needs_toxiproxy
def test_close_stops_the_server(tmp_path: Path, echo_port: int) -> None:
    faults = NetworkFaults(tmp_path)
    faults.start([Node(1, echo_port, 0, tmp_path, extra_ports={INTERNAL_LISTENER: 1})])
    pid = faults.pid
    assert pid is not None
    faults.close()
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


def test_cli_path() -> None:
    run = subprocess.run(
        [sys.executable, "-m", "sdk.testing.toxiproxy", "path"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if find_toxiproxy() is None:
        assert run.returncode == 1 and "install Go" in run.stderr
    else:
        assert run.returncode == 0 and run.stdout.strip() == find_toxiproxy()
