"""Deprecated location: the module is :mod:`sdk.recovery` (the layer below the core).

Deprecated, removed in 0.3: until then ``from sdk.core.recovery import ...`` goes on working,
with a DeprecationWarning.
"""

from __future__ import annotations

import warnings

from sdk._deprecation import REMOVED_IN
from sdk.recovery import *  # noqa: F403
from sdk.recovery import __all__ as __all__

warnings.warn(
    f"sdk.core.recovery is deprecated and removed in {REMOVED_IN}: import from sdk.recovery",
    DeprecationWarning,
    stacklevel=2,
)
