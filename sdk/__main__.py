"""Command line of the SDK.

``python -m sdk profile explain NAME|GUARANTEE``, ``python -m sdk profile reference``,
``python -m sdk doctor NAME --file profiles.yaml [--topic T ...] [--json]`` (the cluster checked
against a profile), and ``python -m sdk doctor restart-check|preferred-leaders ...`` (rolling
restarts).
"""

from __future__ import annotations

import argparse
import sys

from sdk.errors import SdkError


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m sdk", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    profile = commands.add_parser("profile", help="inspect delivery profiles")
    actions = profile.add_subparsers(dest="action", required=True)
    explain = actions.add_parser(
        "explain",
        help="print the effective librdkafka settings of a profile or guarantee, and why",
    )
    explain.add_argument(
        "target", help="a profile name, or at_most_once|at_least_once|exactly_once"
    )
    explain.add_argument(
        "--file",
        help="YAML profile file (default: $KSEM_PROFILE_FILE and KSEM_PROFILES__* variables)",
    )
    explain.add_argument(
        "--bootstrap-servers",
        default="localhost:9092",
        help="bootstrap servers for a bare guarantee (default: %(default)s)",
    )
    actions.add_parser("reference", help="print the profile reference (docs/profiles.md)")
    # listed for --help only: main() hands everything after "doctor" to the doctor's own parser
    commands.add_parser(
        "doctor",
        help="check the cluster against a profile: python -m sdk doctor NAME --file F "
        "(also restart-check, preferred-leaders)",
        add_help=False,
    )
    return parser


def _doctor(argv: list[str]) -> int:
    """``python -m sdk doctor ...``: the profile checks, or the rolling-restart commands."""
    from sdk.doctor import main as doctor_main

    return doctor_main(argv)


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 on success, 2 for a bad profile or argument; ``doctor``: 1 when a
        check failed.
    """
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["doctor"]:
        return _doctor(args_list[1:])
    args = _parser().parse_args(args_list)
    from sdk.profiles import explain, load_profiles, reference_markdown

    if args.action == "reference":
        print(reference_markdown(), end="")
        return 0
    try:
        profiles = load_profiles(args.file)
        print(explain(args.target, profiles, bootstrap_servers=args.bootstrap_servers))
    except SdkError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
