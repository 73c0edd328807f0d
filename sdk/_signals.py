"""SIGTERM as a request to stop: one helper for every front end's ``run(handle_sigterm=True)``."""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sdk.errors import ConfigurationError

__all__ = ["loop_sigterm_stops", "sigterm_stops"]


@contextmanager
def sigterm_stops(stop: Callable[[], None], enabled: bool) -> Iterator[None]:
    """While the block runs, SIGTERM calls ``stop()`` instead of killing the process.

    Args:
        stop: The front end's thread- and signal-safe stop method.
        enabled: False makes this a no-op (the caller's ``handle_sigterm`` flag).

    Raises:
        ConfigurationError: ``enabled`` outside the main thread (Python installs signal
            handlers only there).
    """
    if not enabled:
        yield
        return
    if threading.current_thread() is not threading.main_thread():
        raise ConfigurationError(
            "handle_sigterm: signal handlers can only be installed in the main thread",
            field="handle_sigterm",
        )
    previous: Any = signal.signal(signal.SIGTERM, lambda *_: stop())
    try:
        yield
    finally:  # None: the previous handler was not set from Python
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


@contextmanager
def loop_sigterm_stops(
    loop: asyncio.AbstractEventLoop, stop: Callable[[], None], enabled: bool
) -> Iterator[None]:
    """The asyncio form of :func:`sigterm_stops`: SIGTERM calls ``stop()`` on ``loop``.

    ``loop.add_signal_handler`` runs ``stop`` as a loop callback, not inside a signal frame.

    Raises:
        ConfigurationError: ``enabled`` when ``loop`` does not run in the main thread (or
            the platform has no loop signal handlers).
    """
    if not enabled:
        yield
        return
    try:
        loop.add_signal_handler(signal.SIGTERM, stop)
    except (RuntimeError, ValueError, NotImplementedError) as exc:
        raise ConfigurationError(
            f"handle_sigterm: cannot install a SIGTERM handler on this event loop ({exc}); "
            "run the loop in the main thread",
            field="handle_sigterm",
        ) from exc
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGTERM)
