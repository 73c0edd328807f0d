"""Ports and ``server.properties`` of a :class:`~sdk.testing.cluster.LocalCluster`'s nodes."""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any

from sdk.testing.cluster._node import Node
from sdk.testing.errors import PortInUseError

__all__ = [
    "INTERNAL_LISTENER",
    "check_port_free",
    "free_ports",
    "has_share_groups",
    "render_config",
]

INTERNAL_LISTENER = "INTERNAL"
"""The inter-broker listener of a cluster whose clients go through fault proxies."""


def _release(kafka_version: str) -> tuple[int, int]:
    major, minor, *_ = (int(part) for part in kafka_version.split("-")[0].split("."))
    return major, minor


def has_share_groups(kafka_version: str) -> bool:
    """Whether the harness turns share groups (KIP-932, ``sdk.queue``) on for this release.

    4.2 is the first release whose share groups librdkafka's ``ShareConsumer`` can use: on 4.1
    (preview, ``share.version=1`` finalized by hand) it joins and is handed no records
    (measured, docs/compatibility.md); 4.0 has only the early-access protocol, 3.9 none.
    """
    return _release(kafka_version) >= (4, 2)


def _share_group_config(replication: int, min_isr: int) -> dict[str, Any]:
    return {
        "share.coordinator.state.topic.replication.factor": replication,
        "share.coordinator.state.topic.min.isr": min_isr,
        # share groups (sdk.queue): let tests use short record locks (broker floor: 15 s),
        # so a killed worker's records come back within seconds
        "group.share.min.record.lock.duration.ms": 1_000,
        # ... and evict a killed member within seconds: until its session times out (broker
        # default and floor: 45 s) the partitions assigned to it deliver to nobody
        "group.share.session.timeout.ms": 6_000,
        "group.share.min.session.timeout.ms": 6_000,
        "group.share.heartbeat.interval.ms": 1_000,
        "group.share.min.heartbeat.interval.ms": 1_000,
    }


def free_ports(count: int) -> list[int]:
    """Return ``count`` distinct ports on 127.0.0.1 that were free a moment ago.

    All sockets are held until every port is chosen, so the kernel cannot hand out one twice;
    another process may still take one before a broker binds it (the caller retries).
    """
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def check_port_free(port: int) -> None:
    """Fail early, with a clear message, if a requested port is taken.

    Raises:
        PortInUseError: Something listens on (or holds) ``port`` on 127.0.0.1.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise PortInUseError(
                f"Port {port} on 127.0.0.1 is already in use, so a broker cannot listen on it. "
                "Stop whatever holds it (see 'ss -ltnp'), pick other ports, or pass no ports and "
                "let the cluster choose free ones."
            ) from exc


def render_config(
    node: Node,
    voters: str,
    *,
    size: int,
    extra_listeners: Mapping[str, str],
    broker_config: Mapping[str, Any],
    advertised_port: int | None = None,
    kafka_version: str = "4.3.1",
) -> str:
    """Render a node's ``server.properties``.

    Args:
        node: The node (its id, ports and directory).
        voters: ``controller.quorum.voters`` of the cluster.
        size: Number of nodes (1: replication 1; 3: replication 3, min ISR 2).
        extra_listeners: Extra client listeners, name -> security protocol.
        broker_config: Entries that win over the defaults.
        advertised_port: Port the client (PLAINTEXT) listener advertises instead of its own (a
            fault proxy's); brokers then talk to each other on :data:`INTERNAL_LISTENER`, which
            must be among ``extra_listeners``.
        kafka_version: The broker release: share-group settings only where the harness turns
            share groups on (:func:`has_share_groups`); 3.9 and 4.0 get none.

    Returns:
        The file's text.
    """
    replication = 1 if size == 1 else 3
    min_isr = 1 if size == 1 else 2
    config: dict[str, Any] = {
        "process.roles": "broker,controller",
        "node.id": node.node_id,
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:"
        f"{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(node.directory / "data"),
        "num.partitions": 1,
        "default.replication.factor": replication,
        "min.insync.replicas": min_isr,
        "offsets.topic.replication.factor": replication,
        "offsets.topic.num.partitions": 10,
        "transaction.state.log.replication.factor": replication,
        "transaction.state.log.min.isr": min_isr,
        "transaction.state.log.num.partitions": 10,
        "group.initial.rebalance.delay.ms": 0,
        "auto.create.topics.enable": "false",
        "unclean.leader.election.enable": "false",
    }
    if has_share_groups(kafka_version):
        config.update(_share_group_config(replication, min_isr))
    if advertised_port is not None:  # clients go through the proxy, brokers around it
        config["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{advertised_port}"
        config["inter.broker.listener.name"] = INTERNAL_LISTENER
    for name, protocol in extra_listeners.items():
        address = f",{name}://127.0.0.1:{node.extra_ports[name]}"
        config["listeners"] += address
        config["advertised.listeners"] += address
        config["listener.security.protocol.map"] += f",{name}:{protocol}"
    config.update(broker_config)
    return "".join(f"{key}={value}\n" for key, value in config.items())
