"""The example plugin package installs with pip and its entry points are used by name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "examples" / "plugin_package"

pytestmark = pytest.mark.broker


def test_plugin_package_entry_points(tmp_path: Path, kafka_cluster: Any) -> None:
    target = tmp_path / "site"
    install = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-deps",
            "--target",
            str(target),
            str(PACKAGE),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert install.returncode == 0, install.stderr[-2000:]
    assert (target / "ksem_example_plugins-0.1.0.dist-info" / "entry_points.txt").exists()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)]),
        "KAFKA_BOOTSTRAP_SERVERS": kafka_cluster.bootstrap_servers,
    }
    run = subprocess.run(
        [sys.executable, str(PACKAGE / "demo.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "{'eu': [0, 1, 2], 'us': [3, 4, 5], 'ap': [6, 7, 8]}" in run.stdout
    assert "{'big': 6, 'small': 2}" in run.stdout
