"""Deprecated location: the module is :mod:`sdk.failure` (the layer below the core).

Kept for one release so that ``from sdk.core.failure import ...`` goes on working, with a
DeprecationWarning.
"""

from __future__ import annotations

import warnings

from sdk.failure import *  # noqa: F403
from sdk.failure import __all__ as __all__

warnings.warn(
    "sdk.core.failure is deprecated, import from sdk.failure",
    DeprecationWarning,
    stacklevel=2,
)
