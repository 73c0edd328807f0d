"""Deprecated location: the module is :mod:`sdk.lifecycle` (the layer below the core).

Deprecated, removed in 0.3: until then ``from sdk.core.lifecycle import ...`` goes on working,
with a DeprecationWarning.
"""

from __future__ import annotations

import warnings

from sdk._deprecation import REMOVED_IN
from sdk.lifecycle import *  # noqa: F403
from sdk.lifecycle import __all__ as __all__

warnings.warn(
    f"sdk.core.lifecycle is deprecated and removed in {REMOVED_IN}: import from sdk.lifecycle",
    DeprecationWarning,
    stacklevel=2,
)
