"""Command line: ``python -m sdk.testing.cluster up [--nodes 3] | down | status | fetch``.

``fetch`` only resolves and caches the broker jars; ``up`` starts a cluster in the
background and prints its bootstrap servers; ``down`` stops it; ``status`` prints each node's
state. Clusters are named (``--name``, default ``default``) and their state lives under the
cache directory, so ``down`` works from another shell.

A cluster started with ``up --network-faults`` has a Toxiproxy proxy before each broker, and
``cut``, ``heal``, ``latency``, ``bandwidth``, ``reset-peer`` and ``timeout`` put faults on the
clients' connections to one broker (``--broker N``) or to all (the default)::

    python -m sdk.testing.cluster latency --broker 2 --ms 300 --jitter-ms 100
    python -m sdk.testing.cluster heal
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from sdk.testing.cluster._local import LocalCluster, NodeState
from sdk.testing.cluster._proxy import NetworkFaults
from sdk.testing.errors import ClusterError
from sdk.testing.jars import resolve_broker_jars, session_kafka_version
from sdk.testing.tools import cache_root


def _workdir(name: str) -> Path:
    return cache_root() / "clusters" / name


def _up(args: argparse.Namespace) -> int:
    workdir = _workdir(args.name)
    if (workdir / "state.json").exists():
        existing = LocalCluster.attach(workdir)
        if any(existing.state_of(n) is not NodeState.STOPPED for n in existing.node_ids):
            print(
                f"cluster '{args.name}' is already running at {existing.bootstrap_servers} "
                f"(stop it with: python -m sdk.testing.cluster down --name {args.name})",
                file=sys.stderr,
            )
            return 1
    shutil.rmtree(workdir, ignore_errors=True)
    cluster = LocalCluster(
        args.nodes,
        kafka_version=args.kafka_version,
        workdir=workdir,
        die_with_parent=False,
        heap=args.heap,
        network_faults=args.network_faults,
    )
    cluster.start()
    print(cluster.bootstrap_servers)
    print(
        f"# point profiles at it: export KSEM_BOOTSTRAP_SERVERS={cluster.bootstrap_servers}",
        file=sys.stderr,
    )
    return 0


def _down(args: argparse.Namespace) -> int:
    workdir = _workdir(args.name)
    cluster = LocalCluster.attach(workdir)
    cluster.close()
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"cluster '{args.name}' stopped", file=sys.stderr)
    return 0


def _status(args: argparse.Namespace) -> int:
    cluster = LocalCluster.attach(_workdir(args.name))
    states = {n: cluster.state_of(n) for n in cluster.node_ids}
    for node_id, state in states.items():
        print(f"node {node_id}: {state.value} 127.0.0.1:{cluster.port_of(node_id)}")
        if cluster.network is not None:
            toxics = [t["name"] for t in cluster.network.toxics(node_id)]
            cut = " (cut)" if cluster.network.is_cut(node_id) else ""
            print(f"  proxy 127.0.0.1:{cluster.network.port_of(node_id)}{cut}, toxics {toxics}")
    print(cluster.bootstrap_servers)
    return 0 if all(s is NodeState.RUNNING for s in states.values()) else 3


def _fetch(args: argparse.Namespace) -> int:
    jars = resolve_broker_jars(args.kafka_version)
    print(jars.lib_dir)
    return 0


def _network(args: argparse.Namespace) -> NetworkFaults:
    cluster = LocalCluster.attach(_workdir(args.name))
    if cluster.network is None:
        raise ClusterError(
            f"cluster '{args.name}' runs without network faults; start it with "
            "'python -m sdk.testing.cluster up --network-faults'"
        )
    return cluster.network


def _fault(args: argparse.Namespace) -> int:
    network, broker = _network(args), args.broker
    if args.command == "cut":
        network.cut(broker)
    elif args.command == "heal":
        network.heal(broker)
    elif args.command == "latency":
        network.latency(broker, args.ms, args.jitter_ms, stream=args.stream)
    elif args.command == "bandwidth":
        network.bandwidth(broker, args.kb_s, stream=args.stream)
    elif args.command == "reset-peer":
        network.reset_peer(broker, args.timeout_ms, stream=args.stream)
    else:
        network.timeout(broker, args.ms, stream=args.stream)
    return 0


def _fault_parsers(sub: Any) -> list[argparse.ArgumentParser]:
    """The network fault subcommands (each also takes ``--broker`` and ``--name``)."""
    streams = ("upstream", "downstream", "both")
    cut = sub.add_parser("cut", help="close clients' connections and refuse new ones")
    heal = sub.add_parser("heal", help="remove every network fault")
    latency = sub.add_parser("latency", help="delay data (default: the brokers' answers)")
    latency.add_argument("--ms", type=int, required=True)
    latency.add_argument("--jitter-ms", type=int, default=0)
    bandwidth = sub.add_parser("bandwidth", help="limit each connection's rate")
    bandwidth.add_argument("--kb-s", type=int, required=True)
    reset = sub.add_parser("reset-peer", help="reset connections (TCP RST) once data flows")
    reset.add_argument("--timeout-ms", type=int, default=0)
    timeout = sub.add_parser("timeout", help="drop all data; close after --ms (0: never)")
    timeout.add_argument("--ms", type=int, default=0)
    for command, default in ((latency, "downstream"), (bandwidth, "downstream")):
        command.add_argument("--stream", choices=streams, default=default)
    reset.add_argument("--stream", choices=streams, default="downstream")
    timeout.add_argument("--stream", choices=streams, default="both")
    commands = [cut, heal, latency, bandwidth, reset, timeout]
    for command in commands:
        command.add_argument("--broker", type=int, default=None, help="node id (default: all)")
    return commands


def main(argv: list[str] | None = None) -> int:
    """Run the cluster CLI; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m sdk.testing.cluster")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start a local cluster and print its bootstrap servers")
    up.add_argument("--nodes", type=int, choices=(1, 3), default=1)
    up.add_argument("--kafka-version", default=session_kafka_version())
    up.add_argument("--heap", default="1g", help="JVM -Xmx per node")
    up.add_argument(
        "--network-faults", action="store_true", help="a Toxiproxy proxy before each broker"
    )
    fetch = sub.add_parser("fetch", help="only resolve (and cache) the broker jars")
    fetch.add_argument("--kafka-version", default=session_kafka_version())
    faults = _fault_parsers(sub)
    for command in (up, sub.add_parser("down"), sub.add_parser("status"), *faults):
        command.add_argument("--name", default="default", help="cluster name")
    args = parser.parse_args(argv)
    try:
        commands = {"up": _up, "down": _down, "status": _status, "fetch": _fetch}
        return commands.get(args.command, _fault)(args)
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
