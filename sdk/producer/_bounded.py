"""A librdkafka call bounded in time: run in a helper thread, given up on if it never returns.

librdkafka's ``send_offsets_to_transaction`` can ignore its own timeout and block for good when
the group coordinator moves (librdkafka issues #5456 and #5511, open for the 2.16 we use); the
transactional output (:mod:`sdk.producer._transactions`) runs that call here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from sdk._client import ProducerClient

__all__ = ["ABANDONED", "STALL_GRACE_S", "CallStuckError", "bounded"]

T = TypeVar("T")

ABANDONED: list[ProducerClient] = []
"""Clients whose call never returned: kept referenced, because destroying a librdkafka handle
waits for its threads and would hang the caller the bound just freed."""

STALL_GRACE_S = 5.0
"""Extra seconds a bounded call gets beyond its own timeout before it counts as stuck."""


class CallStuckError(Exception):
    """A librdkafka call did not return within its own timeout plus the grace."""


def bounded(fn: Callable[[], T], limit_s: float, *, name: str) -> T:
    """Run ``fn`` in a helper thread and wait at most ``limit_s`` seconds for it.

    librdkafka's ``send_offsets_to_transaction`` can ignore its timeout and block for good when
    the group coordinator moves (librdkafka issues #5456 and #5511, open for the 2.16 we use).
    A blocked call would freeze the loop while it holds its partitions; bounding it turns the
    hang into an ambiguous outcome (a new producer epoch fences the stuck one).

    Raises:
        CallStuckError: ``fn`` had not returned after ``limit_s`` seconds (it keeps running).
        BaseException: Whatever ``fn`` raised.
    """
    box: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name=f"kafka-call-{name}", daemon=True).start()
    if not done.wait(limit_s):
        raise CallStuckError(f"{name} did not return within {limit_s:g}s")
    if "error" in box:
        raise box["error"]
    return box["value"]  # type: ignore[no-any-return]
