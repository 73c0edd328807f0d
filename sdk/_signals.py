"""SIGTERM as a request to stop: one helper for every front end's ``run(handle_sigterm=...)``.

``handle_sigterm`` takes three values on every ``run()``: ``None`` (the default) installs the
handler only where that is safe and expected, in the main thread and while SIGTERM still has
its default action (an application's own handler is left alone); ``True`` installs it or
raises :class:`ConfigurationError`; ``False`` never installs it.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from sdk.errors import ConfigurationError

__all__ = ["loop_sigterm_stops", "sigterm_stops"]


def _default_wanted() -> bool:
    """``handle_sigterm=None``: the main thread, and SIGTERM not taken by the application."""
    if threading.current_thread() is not threading.main_thread():
        return False
    return signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@contextmanager
def sigterm_stops(stop: Callable[[], None], enabled: bool | None) -> Iterator[None]:
    """While the block runs, SIGTERM calls ``stop()`` instead of killing the process.

    Args:
        stop: The front end's thread- and signal-safe stop method.
        enabled: The caller's ``handle_sigterm``: True installs the handler, False makes this
            a no-op, None installs it only in the main thread when SIGTERM still has its
            default action.

    Raises:
        ConfigurationError: ``enabled`` is True outside the main thread (Python installs
            signal handlers only there).
    """
    if not (enabled or (enabled is None and _default_wanted())):
        yield
        return
    if threading.current_thread() is not threading.main_thread():
        raise ConfigurationError(
            "handle_sigterm: signal handlers can only be installed in the main thread",
            field="handle_sigterm",
        )
    previous = signal.signal(signal.SIGTERM, lambda *_: stop())
    try:
        yield
    finally:  # None: the previous handler was not set from Python
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


@contextmanager
def loop_sigterm_stops(
    loop: asyncio.AbstractEventLoop, stop: Callable[[], None], enabled: bool | None
) -> Iterator[None]:
    """The asyncio form of :func:`sigterm_stops`: SIGTERM calls ``stop()`` on ``loop``.

    ``loop.add_signal_handler`` runs ``stop`` as a loop callback, not inside a signal frame.
    Called from a coroutine of ``loop``, so the current thread is the loop's.

    Raises:
        ConfigurationError: ``enabled`` is True when ``loop`` does not run in the main thread
            (or the platform has no loop signal handlers).
    """
    installed = False
    if enabled or (enabled is None and _default_wanted()):
        try:
            loop.add_signal_handler(signal.SIGTERM, stop)
            installed = True
        except (RuntimeError, ValueError, NotImplementedError) as exc:
            if enabled:  # asked for: say why not; the default just stays out of the way
                raise ConfigurationError(
                    f"handle_sigterm: cannot install a SIGTERM handler on this event loop "
                    f"({exc}); run the loop in the main thread",
                    field="handle_sigterm",
                ) from exc
    try:
        yield
    finally:
        if installed:
            loop.remove_signal_handler(signal.SIGTERM)
