"""Deprecated location: the module is :mod:`sdk.records` (the layer below the core).

Kept for one release so that ``from sdk.core.records import ...`` goes on working, with a
DeprecationWarning.
"""

from __future__ import annotations

import warnings

from sdk.records import *  # noqa: F403
from sdk.records import __all__ as __all__

warnings.warn(
    "sdk.core.records is deprecated, import from sdk.records",
    DeprecationWarning,
    stacklevel=2,
)
