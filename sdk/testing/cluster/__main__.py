"""Command line: ``python -m sdk.testing.cluster up [--nodes 3] | down | status | fetch``.

``fetch`` only resolves and caches the broker jars; ``up`` starts a cluster in the
background and prints its bootstrap servers; ``down`` stops it; ``status`` prints each node's
state. Clusters are named (``--name``, default ``default``) and their state lives under the
cache directory, so ``down`` works from another shell.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from sdk.errors import ClusterError
from sdk.testing.cluster._local import LocalCluster, NodeState
from sdk.testing.jars import DEFAULT_KAFKA_VERSION, resolve_broker_jars
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
    )
    cluster.start()
    print(cluster.bootstrap_servers)
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
    print(cluster.bootstrap_servers)
    return 0 if all(s is NodeState.RUNNING for s in states.values()) else 3


def _fetch(args: argparse.Namespace) -> int:
    jars = resolve_broker_jars(args.kafka_version)
    print(jars.lib_dir)
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the cluster CLI; returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m sdk.testing.cluster")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start a local cluster and print its bootstrap servers")
    up.add_argument("--nodes", type=int, choices=(1, 3), default=1)
    up.add_argument("--kafka-version", default=DEFAULT_KAFKA_VERSION)
    up.add_argument("--heap", default="1g", help="JVM -Xmx per node")
    fetch = sub.add_parser("fetch", help="only resolve (and cache) the broker jars")
    fetch.add_argument("--kafka-version", default=DEFAULT_KAFKA_VERSION)
    for command in (up, sub.add_parser("down"), sub.add_parser("status")):
        command.add_argument("--name", default="default", help="cluster name")
    args = parser.parse_args(argv)
    try:
        commands = {"up": _up, "down": _down, "status": _status, "fetch": _fetch}
        return commands[args.command](args)
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
