"""Deprecated location: the module is :mod:`sdk.records` (the layer below the core).

Deprecated, removed in 0.3: until then ``from sdk.core.records import ...`` goes on working,
with a DeprecationWarning.
"""

from __future__ import annotations

import warnings

from sdk._deprecation import REMOVED_IN
from sdk.records import *  # noqa: F403
from sdk.records import __all__ as __all__

warnings.warn(
    f"sdk.core.records is deprecated and removed in {REMOVED_IN}: import from sdk.records",
    DeprecationWarning,
    stacklevel=2,
)
