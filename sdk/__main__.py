"""Command line of the SDK: ``python -m sdk profile explain NAME|GUARANTEE``."""

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
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run the command line.

    Args:
        argv: Arguments (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 on success, 2 for a bad profile or argument.
    """
    args = _parser().parse_args(argv)
    from sdk.profiles import load_profiles
    from sdk.profiles._explain import explain

    if args.action == "reference":
        from sdk.profiles._reference import reference_markdown

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
