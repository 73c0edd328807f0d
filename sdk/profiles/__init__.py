"""Delivery profiles: a guarantee as data, validated as a whole, rendered to librdkafka.

Internal interfaces, imported by the SDK's other packages and in no ``__all__``:
``ProfileModel`` (the frozen base of every profile model, which spark_integration's job
configs share), ``explain`` and ``reference_markdown`` (what ``python -m sdk profile
explain|reference`` prints).
"""

from typing import Any

from sdk._deprecation import deprecated_name
from sdk.profiles import _common
from sdk.profiles._base import ProfileModel as ProfileModel
from sdk.profiles._common import Guarantee, SecurityProfile
from sdk.profiles._consumer import ConsumerProfile
from sdk.profiles._explain import explain as explain
from sdk.profiles._failure import FailurePolicy
from sdk.profiles._loading import ProfileSet, load_profiles
from sdk.profiles._processing import ProcessingProfile
from sdk.profiles._producer import ProducerProfile
from sdk.profiles._queue import QueueProfile
from sdk.profiles._reference import reference_markdown as reference_markdown

__all__ = [
    "ConsumerProfile",
    "FailurePolicy",
    "Guarantee",
    "ProcessingProfile",
    "ProducerProfile",
    "ProfileSet",
    "QueueProfile",
    "SecurityProfile",
    "load_profiles",
]

_DEPRECATED: dict[str, tuple[str, object]] = {
    "parse_guarantee": (
        "it is no longer exported: use Guarantee(value) (or pass the name as a string)",
        _common.parse_guarantee,
    ),
}


def __getattr__(name: str) -> Any:
    """``parse_guarantee``: no longer exported; deprecated, removed in 0.3."""
    return deprecated_name(__name__, name, _DEPRECATED)
