"""Queues: share groups (KIP-932, the point-to-point model) with the SDK's guarantees.

A share group lets any number of consumers share a topic's records, each record going to one
of them, whatever the partition count; records are acknowledged one by one. See
docs/queues.md for when to use a queue rather than a consumer group.

* :class:`QueueConsumer` — ``run(handler)`` / ``run_batch(handler)`` under a
  :class:`~sdk.profiles.QueueProfile` (at_most_once or at_least_once; exactly_once is refused),
  or ``records()`` with ``ack(record, outcome)`` to acknowledge by hand (an
  :data:`AckOutcome`: ``"accept"``, ``"release"`` or ``"reject"``).
* :func:`apply_group_config` — the share group's broker-side settings from a profile.
"""

from typing import Any

from sdk._deprecation import deprecated_name
from sdk.queue._consumer import QueueConsumer
from sdk.queue._group import apply_group_config
from sdk.queue._manual import AckOutcome
from sdk.queue._records import QueueStats

__all__ = ["AckOutcome", "QueueConsumer", "QueueStats", "apply_group_config"]

_DEPRECATED = {"Outcome": ("use sdk.queue.AckOutcome", AckOutcome)}


def __getattr__(name: str) -> Any:
    """``Outcome``: deprecated, removed in 0.3; it is :data:`AckOutcome`."""
    return deprecated_name(__name__, name, _DEPRECATED)
