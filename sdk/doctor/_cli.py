"""``python -m sdk doctor NAME --file profiles.yaml [--topic T ...] [--json]``.

Exit status: 0 when no check failed (warnings allowed), 1 when one did, 2 for a bad profile or
argument. A profile with a ``schema_registry`` section has its registry checked too.
``python -m sdk doctor restart-check|preferred-leaders ...`` go on to the
rolling-restart commands (:mod:`sdk.doctor._restart`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from sdk.doctor._checks import check
from sdk.doctor._subject import AnyProfile
from sdk.errors import ConfigurationError, SdkError
from sdk.profiles import ProfileSet, load_profiles

__all__ = ["main"]

OK, FAILED, BAD_INPUT = 0, 1, 2

KINDS = ("auto", "processing", "consumer", "producer", "queue")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m sdk doctor",
        description="check the cluster of a profile against what its guarantee needs "
        "(also: restart-check, preferred-leaders)",
    )
    parser.add_argument("name", help="the profile's name")
    parser.add_argument(
        "--file",
        help="YAML profile file (default: $KSEM_PROFILE_FILE and KSEM_PROFILES__* variables)",
    )
    parser.add_argument(
        "--topic",
        action="append",
        default=[],
        help="a topic the profile reads (a producer profile: writes); repeat for more",
    )
    parser.add_argument(
        "--output-topic",
        action="append",
        default=[],
        help="a topic a processing profile writes; repeat for more",
    )
    parser.add_argument(
        "--kind",
        choices=KINDS,
        default="auto",
        help="check the profile as this side (auto: processing if it has both sides, else "
        "consumer, else producer; a queue needs --kind queue)",
    )
    parser.add_argument(
        "--timeout-s", type=float, default=10.0, help="seconds per request (default: %(default)s)"
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    return parser


def _profile(profiles: ProfileSet, name: str, kind: str) -> tuple[str, AnyProfile]:
    """The side of ``name`` to check.

    Raises:
        ConfigurationError: The profile is missing, or has no side of that kind.
    """
    builders: dict[str, Callable[[str], AnyProfile]] = {
        "processing": profiles.processing,
        "consumer": profiles.consumer,
        "producer": profiles.producer,
        "queue": profiles.queue,
    }
    if kind != "auto":
        return kind, builders[kind](name)
    first: ConfigurationError | None = None
    for side in ("processing", "consumer", "producer"):
        try:
            return side, builders[side](name)
        except ConfigurationError as exc:
            first = first or exc
    assert first is not None
    raise first


_RESTART_COMMANDS = ("restart-check", "preferred-leaders")


def _restart(argv: list[str]) -> int:
    """The rolling-restart commands, imported when asked for."""
    try:
        from sdk.doctor._restart import main as restart_main
    except ModuleNotFoundError as exc:
        if exc.name != "sdk.doctor._restart":
            raise
        print(f"doctor {argv[0]}: not available in this version", file=sys.stderr)
        return BAD_INPUT
    return restart_main(argv)


def main(argv: list[str]) -> int:
    """Run the doctor on one profile, or a rolling-restart command (``argv`` follows ``doctor``).

    Returns:
        The exit status (see the module docstring).
    """
    if argv[:1] and argv[0] in _RESTART_COMMANDS:
        return _restart(argv)
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2): a status, not an exit
        return exc.code if isinstance(exc.code, int) else BAD_INPUT
    try:
        profiles = load_profiles(args.file)
        kind, profile = _profile(profiles, args.name, args.kind)
        report = check(
            profile,
            args.topic,
            output_topics=args.output_topic,
            timeout_s=args.timeout_s,
            label=f"profile {args.name!r}",
            schema_registry=profiles.schema_registry(args.name),
        )
    except SdkError as exc:
        if args.json:
            print(json.dumps({"error": str(exc), "ok": False}))
        else:
            print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    if args.json:
        print(json.dumps({"profile": args.name, "kind": kind, **report.to_dict()}, indent=2))
    else:
        print(report)
    return OK if report.ok else FAILED
