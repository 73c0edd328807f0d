"""Run a script with the pure-Python cores (``SDK_PURE_PYTHON=1``) in a fresh interpreter.

Shared by the compiled cores' tests (tests/sdk/producer/test_handle.py,
tests/sdk/core/test_records_core.py): each runs a broker scenario end to end on the Python twin
of its compiled core, which the rest of the suite (built with a C compiler) does not use.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_pure_python(script: str, timeout: float) -> list[str]:
    """Run ``script`` with ``SDK_PURE_PYTHON=1``; return its stdout's words (asserts exit 0)."""
    env = {**os.environ, "SDK_PURE_PYTHON": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()
