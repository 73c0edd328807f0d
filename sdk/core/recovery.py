"""Deprecated location: the module is :mod:`sdk.recovery` (the layer below the core).

Kept for one release so that ``from sdk.core.recovery import ...`` goes on working, with a
DeprecationWarning.
"""

from __future__ import annotations

import warnings

from sdk.recovery import *  # noqa: F403
from sdk.recovery import __all__ as __all__

warnings.warn(
    "sdk.core.recovery is deprecated, import from sdk.recovery",
    DeprecationWarning,
    stacklevel=2,
)
