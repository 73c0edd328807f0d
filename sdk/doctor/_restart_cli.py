"""Command line of the rolling-restart checks: ``restart-check`` and ``preferred-leaders``.

``python -m sdk doctor restart-check --broker ID [--wait]`` and ``python -m sdk doctor
preferred-leaders [--elect]``; :func:`run` gets what follows ``doctor``. Exit status: 0 safe /
all led by their preferred replica, 1 unsafe / some not, 2 could not tell.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence

from sdk._config import ClientConfig
from sdk.doctor._restart import (
    RestartVerdict,
    WaitProgress,
    elect_preferred_leaders,
    preferred_leaders,
    restart_check,
    wait_until_safe,
)
from sdk.doctor._restart_read import PartitionState, admin_client, admin_config_from_profile
from sdk.errors import ConfigurationError, KafkaTimeoutError, SdkError

__all__ = ["run"]

SAFE, UNSAFE, UNKNOWN = 0, 1, 2

_FIX_ELECTION = (
    "fix: python -m sdk doctor preferred-leaders --elect (or kafka-leader-election.sh "
    "--bootstrap-server B --election-type PREFERRED --all-topic-partitions)"
)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sdk doctor", description="rolling-restart checks of a Kafka cluster"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser(
        "restart-check",
        help="may this broker be stopped now without a partition going offline or below "
        "min.insync.replicas",
    )
    check.add_argument("--broker", type=int, required=True, help="the broker's node.id")
    check.add_argument(
        "--wait",
        action="store_true",
        help="block until it is safe and the broker's partitions are fully in sync",
    )
    check.add_argument(
        "--safe-only",
        action="store_true",
        help="with --wait: stop waiting once safe, even if some replica is still out of sync",
    )
    leaders = commands.add_parser(
        "preferred-leaders", help="list the partitions not led by their preferred replica"
    )
    leaders.add_argument(
        "--elect", action="store_true", help="run a preferred leader election for them"
    )
    for sub in (check, leaders):
        sub.add_argument(
            "--bootstrap-servers", help="the cluster (default: $KSEM_BOOTSTRAP_SERVERS)"
        )
        sub.add_argument("--file", help="YAML profile file: connect as a profile does")
        sub.add_argument("--profile", help="the profile of --file to connect as")
        sub.add_argument(
            "--timeout-s",
            type=float,
            help="seconds for each request (default 30), or the longest --wait (default 600)",
        )
        sub.add_argument("--json", action="store_true", help="print JSON for scripts")
    return parser


def run(argv: list[str]) -> int:
    """Parse ``argv`` (what follows ``doctor``) and run the command.

    Returns:
        The exit status (see the module docstring).
    """
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2): a status, not an exit
        return exc.code if isinstance(exc.code, int) else UNKNOWN
    try:
        target = _connection(args)
        if args.command == "restart-check":
            return _restart_check(args, target)
        return _preferred_leaders(args, target)
    except SdkError as exc:
        _emit_error(args, exc)
        return UNKNOWN


def _connection(args: argparse.Namespace) -> ClientConfig:
    if args.file:
        if args.bootstrap_servers:
            raise ConfigurationError(
                "give --bootstrap-servers or --file, not both", field="bootstrap_servers"
            )
        return admin_config_from_profile(args.file, args.profile)
    if args.profile:
        raise ConfigurationError("--profile needs --file", field="profile")
    servers = args.bootstrap_servers or os.environ.get("KSEM_BOOTSTRAP_SERVERS")
    if not servers:
        raise ConfigurationError(
            "no cluster: give --bootstrap-servers, --file with --profile, or set "
            "KSEM_BOOTSTRAP_SERVERS",
            field="bootstrap_servers",
        )
    return {"bootstrap.servers": servers}


def _restart_check(args: argparse.Namespace, target: ClientConfig) -> int:
    admin = admin_client(target)
    if not args.wait:
        verdict = restart_check(admin, args.broker, timeout_s=args.timeout_s or 30.0)
        _emit_verdict(args, verdict)
        return SAFE if verdict.safe else UNSAFE
    seen: list[WaitProgress] = []
    printed: dict[str, str | float] = {"line": "", "at": 0.0}

    def progress(step: WaitProgress) -> None:
        seen.append(step)
        what = step.line[7:]  # without the elapsed seconds
        if what != printed["line"] or time.monotonic() - float(printed["at"]) >= 30.0:
            print(step.line, file=sys.stderr, flush=True)
            printed.update(line=what, at=time.monotonic())

    try:
        verdict = wait_until_safe(
            admin,
            args.broker,
            args.timeout_s or 600.0,
            full_isr=not args.safe_only,
            progress=progress,
        )
    except (KafkaTimeoutError, ConfigurationError) as exc:
        last = seen[-1].verdict if seen else None
        if last is None:  # never read the cluster (or a bad argument): cannot tell
            raise
        _emit_verdict(args, last, error=str(exc))
        return UNSAFE
    _emit_verdict(args, verdict, waited_s=seen[-1].elapsed_s if seen else 0.0)
    return SAFE


def _preferred_leaders(args: argparse.Namespace, target: ClientConfig) -> int:
    admin = admin_client(target)
    timeout_s = args.timeout_s or 30.0
    before = preferred_leaders(admin, timeout_s=timeout_s)
    elected = None
    after = before
    if args.elect and before:
        elected = elect_preferred_leaders(
            admin, [(p.topic, p.partition) for p in before], timeout_s=max(timeout_s, 60.0)
        )
        after = preferred_leaders(admin, timeout_s=timeout_s)
    if args.json:
        out: dict[str, object] = {"not_preferred": [_leader_dict(p) for p in after]}
        if elected is not None:
            out["elected"] = [r._asdict() for r in elected]
            out["not_preferred_before"] = [_leader_dict(p) for p in before]
        print(json.dumps(out, indent=2))
        return SAFE if not after else UNSAFE
    if elected is not None:
        print(f"preferred leader election of {len(elected)} partition(s):")
        for r in elected:
            print(f"  {r.topic}[{r.partition}]  {'elected' if r.error is None else r.error}")
    if not after:
        print("every partition is led by its preferred replica")
        return SAFE
    print(f"{len(after)} partition(s) not led by their preferred replica:")
    rows = [("partition", "leader", "preferred", "replicas", "ISR")]
    rows += [
        (p.name, str(p.leader), str(p.replicas[0]), _ids(p.replicas), _ids(p.isr)) for p in after
    ]
    _table(rows)
    if not args.elect:
        print(_FIX_ELECTION)
    return UNSAFE


def _leader_dict(p: PartitionState) -> dict[str, object]:
    return {
        "topic": p.topic,
        "partition": p.partition,
        "leader": p.leader,
        "preferred": p.replicas[0],
        "replicas": list(p.replicas),
        "isr": list(p.isr),
    }


def _emit_verdict(
    args: argparse.Namespace,
    verdict: RestartVerdict,
    *,
    error: str | None = None,
    waited_s: float | None = None,
) -> None:
    if args.json:
        out = verdict.to_dict()
        if error is not None:
            out["error"] = error
        if waited_s is not None:
            out["waited_s"] = round(waited_s, 1)
        print(json.dumps(out, indent=2))
        return
    if error is not None:
        print(f"error: {error}", file=sys.stderr)
    print(verdict.summary())
    if verdict.at_risk:
        by_name = {(p.topic, p.partition): p for p in verdict.state.partitions}
        rows = [
            ("partition", "leader", "replicas", "ISR", "min ISR", f"if {verdict.broker_id} stops")
        ]
        for risk in verdict.at_risk:
            p = by_name[(risk.topic, risk.partition)]
            rows.append(
                (p.name, str(p.leader), _ids(p.replicas), _ids(p.isr), str(p.min_isr), risk.why)
            )
        _table(rows)
    if verdict.lagging and not verdict.at_risk:
        print(
            "  under-replicated: "
            + ", ".join(f"{p.name} ISR {_ids(p.isr)}" for p in verdict.lagging[:10])
        )
    state = verdict.state
    down = sorted(state.replica_brokers - set(state.brokers))
    print(
        f"read: brokers {_ids(state.brokers)} running"
        + (f" ({_ids(down)} not)" if down else "")
        + f", controller {state.controller_id}; {len(state.partitions)} partitions of "
        f"{len(state.min_isr)} topic(s); broker {verdict.broker_id} hosts {verdict.hosted}, "
        f"leads {verdict.leads}" + (f"; waited {waited_s:.1f}s" if waited_s is not None else "")
    )


def _emit_error(args: argparse.Namespace, exc: SdkError) -> None:
    if getattr(args, "json", False):
        print(json.dumps({"error": str(exc), "kind": type(exc).__name__}, indent=2))
    else:
        print(f"error: {exc}", file=sys.stderr)


def _ids(ids: Sequence[int]) -> str:
    return ",".join(map(str, ids)) or "-"


def _table(rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
