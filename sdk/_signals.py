"""SIGTERM and Ctrl-C as a request to stop: one helper for every front end's ``run()``.

While ``run()`` goes, SIGTERM and the first Ctrl-C (SIGINT) call the front end's ``stop()``:
the run finishes the record or batch in hand, commits what its guarantee allows, and returns
its stats. A second Ctrl-C raises ``KeyboardInterrupt`` at once, as Python does by default.

``handle_sigterm`` (every ``run()``) decides for both signals, with three values: ``None``
(the default) installs each handler only where that is safe and expected, in the main thread
and while the signal still has Python's default action (SIGTERM: ``SIG_DFL``; SIGINT:
``signal.default_int_handler``, or under ``asyncio.run`` the runner's own), so an
application's own handler is left alone; ``True`` installs both or raises
:class:`ConfigurationError`; ``False`` installs neither.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TypeAlias

from sdk.errors import ConfigurationError

__all__ = ["loop_sigterm_stops", "sigterm_stops"]

_Handler: TypeAlias = "Callable[[int, FrameType | None], object] | int | signal.Handlers | None"
"""What ``signal.getsignal`` returns and ``signal.signal`` takes (None: not set from Python)."""

_log = logging.getLogger("sdk")
# confluent-kafka 2.16: a KeyboardInterrupt raised inside one of its callbacks (error_cb,
# logger) while consume() runs makes consume() return NULL with no exception set
_LOST_INTERRUPT = "returned NULL without setting an exception"


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _sigint_free(handler: _Handler) -> bool:
    """SIGINT still does what Python (or ``asyncio.run``) does by default."""
    if handler is signal.default_int_handler:
        return True
    # asyncio.Runner (asyncio.run) installs partial(runner._on_sigint, main_task=...)
    owner = getattr(getattr(handler, "func", None), "__self__", None)
    return isinstance(owner, asyncio.Runner)


class _CtrlC:
    """The SIGINT handler of a run: the first press stops it, the second interrupts."""

    def __init__(
        self,
        stop: Callable[[], None],
        second: Callable[[int, FrameType | None], object] | None = None,
    ) -> None:
        self._stop = stop
        self._second = second
        self.presses = 0

    def __call__(self, *_: object) -> None:
        self.presses += 1
        if self.presses > 1:
            if self._second is not None:  # asyncio.run's: cancels the main task, then raises
                self._second(signal.SIGINT, None)
                return
            raise KeyboardInterrupt
        _log.warning(
            "Ctrl-C: stopping after the record or batch in hand (Ctrl-C again to stop at once)"
        )
        self._stop()


def _on_sigterm(stop: Callable[[], None]) -> Callable[..., None]:
    def handler(*_: object) -> None:
        _log.info("SIGTERM: stopping after the record or batch in hand")
        stop()

    return handler


@contextmanager
def sigterm_stops(stop: Callable[[], None], enabled: bool | None) -> Iterator[None]:
    """While the block runs, SIGTERM and the first Ctrl-C call ``stop()``.

    A second Ctrl-C raises ``KeyboardInterrupt`` (also when it lands inside a confluent-kafka
    callback, where confluent-kafka would lose it and raise a ``SystemError``).

    Args:
        stop: The front end's thread- and signal-safe stop method.
        enabled: The caller's ``handle_sigterm``: True installs both handlers, False makes
            this a no-op, None installs each only in the main thread while its signal still
            has its default action.

    Raises:
        ConfigurationError: ``enabled`` is True outside the main thread (Python installs
            signal handlers only there).
    """
    if enabled and not _main_thread():
        raise ConfigurationError(
            "handle_sigterm: signal handlers can only be installed in the main thread",
            field="handle_sigterm",
        )
    default = enabled is None and _main_thread()
    term = enabled or (default and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
    ctrl_c = (
        _CtrlC(stop)
        if enabled or (default and _sigint_free(signal.getsignal(signal.SIGINT)))
        else None
    )
    previous: dict[int, _Handler] = {}
    if term:
        previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, _on_sigterm(stop))
    if ctrl_c is not None:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, ctrl_c)
    try:
        yield
    except SystemError as exc:
        if ctrl_c is not None and ctrl_c.presses > 1 and _LOST_INTERRUPT in str(exc):
            raise KeyboardInterrupt from None
        raise
    finally:
        for signum, handler in previous.items():  # None: the handler was not set from Python
            fallback = signal.SIG_DFL if signum == signal.SIGTERM else signal.default_int_handler
            signal.signal(signum, fallback if handler is None else handler)


@contextmanager
def loop_sigterm_stops(
    loop: asyncio.AbstractEventLoop, stop: Callable[[], None], enabled: bool | None
) -> Iterator[None]:
    """The asyncio form of :func:`sigterm_stops`: SIGTERM and Ctrl-C call ``stop()`` on ``loop``.

    ``loop.add_signal_handler`` runs the handlers as loop callbacks, not inside a signal
    frame. Called from a coroutine of ``loop``, so the current thread is the loop's. A second
    Ctrl-C goes to ``asyncio.run``'s own handler, which cancels the main task (the core
    leaves as on any cancellation) and raises ``KeyboardInterrupt``; outside ``asyncio.run``
    it raises ``KeyboardInterrupt`` out of the loop.

    Raises:
        ConfigurationError: ``enabled`` is True when ``loop`` does not run in the main thread
            (or the platform has no loop signal handlers).
    """
    default = enabled is None and _main_thread()
    wanted: dict[int, Callable[..., None]] = {}
    if enabled or (default and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL):
        wanted[signal.SIGTERM] = _on_sigterm(stop)
    sigint = signal.getsignal(signal.SIGINT)
    if enabled or (default and _sigint_free(sigint)):
        runner = sigint if callable(sigint) and sigint is not signal.default_int_handler else None
        wanted[signal.SIGINT] = _CtrlC(stop, second=runner)
    installed: dict[int, _Handler] = {}
    try:
        for signum, handler in wanted.items():
            before = signal.getsignal(signum)
            loop.add_signal_handler(signum, handler)
            installed[signum] = before
    except (RuntimeError, ValueError, NotImplementedError) as exc:
        _remove(loop, installed)
        installed = {}
        if enabled:  # asked for: say why not; the default just stays out of the way
            raise ConfigurationError(
                f"handle_sigterm: cannot install signal handlers on this event loop "
                f"({exc}); run the loop in the main thread",
                field="handle_sigterm",
            ) from exc
    try:
        yield
    finally:
        _remove(loop, installed)


def _remove(loop: asyncio.AbstractEventLoop, installed: dict[int, _Handler]) -> None:
    """Remove the loop's handlers; put back what was there (asyncio would not, for SIGINT)."""
    for signum, before in installed.items():
        loop.remove_signal_handler(signum)
        if before is not None:
            signal.signal(signum, before)
