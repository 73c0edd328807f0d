"""The one lifecycle of every client: Producer, Consumer and Processor share these states."""

from __future__ import annotations

from enum import Enum

__all__ = ["Lifecycle"]


class Lifecycle(Enum):
    """Where a client is in its life; a ``CLOSED`` one refuses use (``ClosedError``).

    ``NEW``: made, no network I/O yet (clients are created lazily). ``OPEN``: its Kafka client
    exists. ``RUNNING`` / ``STOPPING``: a run loop is going / finishing (Processor).
    ``CLOSED``: released. ``CREATED`` is another name for ``NEW`` (the Processor's old name).
    """

    NEW = "new"
    OPEN = "open"
    RUNNING = "running"
    STOPPING = "stopping"
    CLOSED = "closed"
    CREATED = "new"
