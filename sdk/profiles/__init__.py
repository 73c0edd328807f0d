"""Delivery profiles: a guarantee as data, validated as a whole, rendered to librdkafka."""

from sdk.profiles._common import Guarantee, SecurityProfile, parse_guarantee
from sdk.profiles._consumer import ConsumerProfile
from sdk.profiles._failure import FailurePolicy
from sdk.profiles._loading import ProfileSet, load_profiles
from sdk.profiles._processing import ProcessingProfile
from sdk.profiles._producer import ProducerProfile
from sdk.profiles._queue import QueueProfile

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
    "parse_guarantee",
]
