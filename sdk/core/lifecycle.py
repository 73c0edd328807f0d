"""Deprecated location: the module is :mod:`sdk.lifecycle` (the layer below the core).

Kept for one release so that ``from sdk.core.lifecycle import ...`` goes on working, with a
DeprecationWarning.
"""

from __future__ import annotations

import warnings

from sdk.lifecycle import *  # noqa: F403
from sdk.lifecycle import __all__ as __all__

warnings.warn(
    "sdk.core.lifecycle is deprecated, import from sdk.lifecycle",
    DeprecationWarning,
    stacklevel=2,
)
