"""The fixtures are opt-in: installing the SDK adds nothing to a user's pytest session."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import pytest

FIXTURES = (
    "kafka_cluster",
    "kafka_cluster3",
    "kafka_cluster3_proxied",
    "make_topic",
    "make_group",
    "postgres",
    "postgres_uri",
)


def _fixtures_of(project: Path) -> str:
    """Run ``pytest --fixtures`` in ``project`` as a user would, with this interpreter."""
    (project / "test_one.py").write_text("def test_one():\n    pass\n")
    # the user's session, not ours: no options or plugins inherited from this run
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "--fixtures", "-p", "no:cacheprovider", str(project)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return run.stdout


def test_no_pytest11_entry_point_is_installed() -> None:
    values = [ep.value for ep in entry_points(group="pytest11")]
    assert not [v for v in values if v.startswith("sdk.")], values


@pytest.mark.parametrize("opted_in", [False, True], ids=["installed", "opted-in"])
def test_fixtures_appear_only_after_opting_in(tmp_path: Path, opted_in: bool) -> None:
    if opted_in:
        (tmp_path / "conftest.py").write_text('pytest_plugins = ["sdk.testing.pytest_plugin"]\n')
    listed = _fixtures_of(tmp_path)
    for name in FIXTURES:
        assert (f"\n{name} " in listed) is opted_in, (name, listed[-3000:])
