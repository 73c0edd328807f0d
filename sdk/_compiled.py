"""Where the optional C extensions are loaded: one rule for every compiled core (issue #16).

``pip install`` builds ``sdk.producer._speedups`` and ``sdk.core._speedups`` when a C compiler
is found (``setup.py`` marks them optional). Each compiled part has a Python twin with the same
contract, and the module that exports it asks :func:`extension` which one to use.
``SDK_PURE_PYTHON=1`` in the environment picks the twins everywhere.
"""

from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["extension"]


def extension(name: str) -> ModuleType | None:
    """The extension module ``name``, or None: not built, or ``SDK_PURE_PYTHON`` is set."""
    if os.environ.get("SDK_PURE_PYTHON"):
        return None
    try:
        return importlib.import_module(name)
    except ImportError:  # not built (no C compiler at install): the caller's Python twin
        return None
