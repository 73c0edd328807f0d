"""Deprecated location: the module is :mod:`sdk.failure` (the layer below the core).

Deprecated, removed in 0.3: until then ``from sdk.core.failure import ...`` goes on working,
with a DeprecationWarning.
"""

from __future__ import annotations

import warnings

from sdk._deprecation import REMOVED_IN
from sdk.failure import *  # noqa: F403
from sdk.failure import __all__ as __all__

warnings.warn(
    f"sdk.core.failure is deprecated and removed in {REMOVED_IN}: import from sdk.failure",
    DeprecationWarning,
    stacklevel=2,
)
