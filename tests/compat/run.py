"""Run the compatibility suite on each broker, and write the matrix to docs/compatibility.md.

``./dev.sh compat [VERSION ...]`` (default: every version of the matrix) runs
:mod:`tests.compat.suite` once per broker, one pytest session each with ``KSEM_KAFKA_VERSION``
set, so every cluster of that session runs that release. Each run's outcome per feature is
kept in ``tests/compat/results.json`` under its broker and client versions (a later run
replaces an earlier one of the same pair), and the tables of docs/compatibility.md (between
its ``compat-table`` markers) are rendered from all of them and printed.

``python -m tests.compat.run --render`` only renders; run it with another interpreter (a venv
with an older confluent-kafka) to add that client's column.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import confluent_kafka

from sdk.testing.jars import DEFAULT_KAFKA_VERSION, KAFKA_VERSION_ENV, SUPPORTED_KAFKA_VERSIONS
from tests.compat.suite import FEATURES, node_ids

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "tests" / "compat" / "results.json"
DOC = ROOT / "docs" / "compatibility.md"
_MARKS = {
    "broker": ("<!-- compat-table:broker:start -->", "<!-- compat-table:broker:end -->"),
    "client": ("<!-- compat-table:client:start -->", "<!-- compat-table:client:end -->"),
}
_SYMBOL = {"pass": "pass", "fail": "**FAIL**", "skip": "skip", None: "not run"}


def _outcomes(junit: Path) -> dict[str, str]:
    """Test id (``path::name`` without parameters) -> worst outcome among its cases."""
    rank = {"pass": 0, "skip": 1, "fail": 2}
    out: dict[str, str] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        path = case.get("classname", "").replace(".", "/") + ".py"
        test_id = f"{path}::{case.get('name', '').split('[')[0]}"
        if case.find("failure") is not None or case.find("error") is not None:
            outcome = "fail"
        elif case.find("skipped") is not None:
            outcome = "skip"
        else:
            outcome = "pass"
        if rank[outcome] >= rank[out.get(test_id, "pass")]:
            out[test_id] = outcome
    return out


def _per_feature(outcomes: dict[str, str]) -> dict[str, str | None]:
    cells: dict[str, str | None] = {}
    for feature, paths in FEATURES.items():
        seen = [
            outcome
            for test_id, outcome in outcomes.items()
            if any(test_id == p or test_id.startswith(p + "::") for p in paths)
        ]
        if not seen:
            cells[feature] = None  # collected nothing: an error before the tests (counted fail)
        elif "fail" in seen:
            cells[feature] = "fail"
        elif all(o == "skip" for o in seen):
            cells[feature] = "skip"
        else:
            cells[feature] = "pass"
    return cells


def _commit() -> str:
    """The commit the suite runs from (``+changes`` if the SDK or the tests differ from it).

    Runs of the six brokers made one at a time (``./dev.sh compat V`` each, so that a shared
    machine can interleave other work) are one run of the matrix when they share this and
    the date; the tables say which.
    """
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    changed = subprocess.run(
        ["git", "diff", "--quiet", "HEAD", "--", "sdk", "tests", ":!tests/compat/results.json"],
        cwd=ROOT,
    ).returncode
    return f"{head or 'unknown'}{'+changes' if changed else ''}"


def run_one(version: str, pytest_args: list[str]) -> dict[str, object]:
    """Run the suite on one broker; return its record for results.json."""
    commit = _commit()  # before the run: a commit made while it runs is not what ran
    env = dict(os.environ, **{KAFKA_VERSION_ENV: version})
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)  # the harness's own cluster of that release
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        cmd = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-q",
            f"--junitxml={junit}",
            *pytest_args,
            *node_ids(),
        ]
        print(f"== Kafka {version}: {' '.join(cmd[1:6])} ... ({len(node_ids())} paths)", flush=True)
        started = time.monotonic()
        code = subprocess.call(cmd, cwd=ROOT, env=env)
        elapsed = time.monotonic() - started
        cells = _per_feature(_outcomes(junit)) if junit.exists() else dict.fromkeys(FEATURES)
    print(f"== Kafka {version}: pytest exit {code} in {elapsed:.0f}s", flush=True)
    return {
        "kafka": version,
        "client": confluent_kafka.__version__,
        "librdkafka": confluent_kafka.libversion()[0],
        "date": datetime.date.today().isoformat(),
        "commit": commit,
        "seconds": round(elapsed),
        "exit": code,
        "features": cells,
    }


def _load() -> list[dict[str, object]]:
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else []


def _store(record: dict[str, object]) -> None:
    kept = [r for r in _load() if (r["kafka"], r["client"]) != (record["kafka"], record["client"])]
    RESULTS.write_text(json.dumps([*kept, record], indent=1, sort_keys=True) + "\n")


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def _table(columns: list[dict[str, object]], header: str) -> str:
    lines = [
        f"| feature | {' | '.join(header.format(**c) for c in columns)} |",
        f"| --- | {' | '.join('---' for _ in columns)} |",
    ]
    for feature in FEATURES:
        cells = [_SYMBOL[c["features"].get(feature)] for c in columns]  # type: ignore[attr-defined]
        lines.append(f"| {feature} | {' | '.join(cells)} |")
    runs = " | ".join(
        f"{c['date']}, {c['seconds']} s, {c.get('commit', 'commit not recorded')}" for c in columns
    )
    lines.append(f"| *run: date, seconds, commit* | {runs} |")
    return "\n".join(lines)


def _provenance(columns: list[dict[str, object]]) -> str:
    """One sentence: whether the columns are one run (one commit, one day) or several."""
    pairs = sorted({(str(c["date"]), str(c.get("commit", "commit not recorded"))) for c in columns})
    if len(pairs) == 1:
        date, commit = pairs[0]
        named = commit if commit.startswith("commit") else f"commit {commit}"
        return f"Every column from {named} on {date}, one pytest session per column."
    listed = "; ".join(f"{commit} on {date}" for date, commit in pairs)
    return f"The columns come from {len(pairs)} different runs ({listed})."


def render(results: list[dict[str, object]]) -> str:
    """The two tables (feature by broker, feature by client) of ``results``, as Markdown."""
    if not results:
        return "(no results yet: run ./dev.sh compat)"
    newest_client = max((str(r["client"]) for r in results), key=_key)
    brokers = sorted(
        (r for r in results if r["client"] == newest_client), key=lambda r: _key(str(r["kafka"]))
    )
    clients = sorted(
        (r for r in results if r["kafka"] == DEFAULT_KAFKA_VERSION),
        key=lambda r: _key(str(r["client"])),
    )
    broker_md = f"confluent-kafka {newest_client} on every broker. {_provenance(brokers)}\n\n"
    broker_md += _table(brokers, "Kafka {kafka}")
    missing = [v for v in SUPPORTED_KAFKA_VERSIONS if v not in {r["kafka"] for r in brokers}]
    if missing:
        broker_md += "\n\nNot run yet: " + ", ".join(f"Kafka {v}" for v in missing) + "."
    client_md = f"Kafka {DEFAULT_KAFKA_VERSION} with each client.\n\n" + (
        f"{_provenance(clients)}\n\n{_table(clients, 'confluent-kafka {client}')}"
        if clients
        else "Not run yet."
    )
    return broker_md + "\0" + client_md


def write_doc(text: str) -> None:
    """Replace the tables between the markers of docs/compatibility.md."""
    broker_md, _, client_md = text.partition("\0")
    doc = DOC.read_text()
    for name, body in (("broker", broker_md), ("client", client_md)):
        start, end = _MARKS[name]
        if start in doc and end in doc:
            head, rest = doc.split(start, 1)
            doc = f"{head}{start}\n{body}\n{end}{rest.split(end, 1)[1]}"
    DOC.write_text(doc)


def main(argv: list[str] | None = None) -> int:
    """Run the suite on each version given (default: the matrix), then render the tables."""
    parser = argparse.ArgumentParser(prog="./dev.sh compat")
    parser.add_argument(
        "versions", nargs="*", help=f"default: {' '.join(SUPPORTED_KAFKA_VERSIONS)}"
    )
    parser.add_argument("--render", action="store_true", help="only render the tables")
    parser.add_argument("--pytest-arg", action="append", default=[], help="passed to pytest")
    parser.add_argument(
        "--no-save", action="store_true", help="print this run's table only (CI): no file written"
    )
    args = parser.parse_args(argv)
    failed = False
    runs: list[dict[str, object]] = []
    if not args.render:
        for version in args.versions or SUPPORTED_KAFKA_VERSIONS:
            record = run_one(version, args.pytest_arg)
            runs.append(record)
            if not args.no_save:
                _store(record)
            cells = record["features"].values()  # type: ignore[attr-defined]
            failed |= any(v in ("fail", None) for v in cells)
    text = render(runs if args.no_save else _load())
    if DOC.exists() and not args.no_save:
        write_doc(text)
    print(text.replace("\0", "\n\n"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
