"""Brokers that die with the Python process that started them, even if it is SIGKILLed.

:func:`die_with_parent` is the child's half (``PR_SET_PDEATHSIG``); :class:`Spawner` is the
parent's: the one thread every broker is forked from, because the kernel ties the signal to the
forking *thread*.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import queue
import signal
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path

__all__ = ["Spawner", "die_with_parent"]


def die_with_parent(parent: int) -> Callable[[], None]:
    """A ``preexec_fn`` that makes the child get SIGKILL when its parent's thread ends.

    Args:
        parent: Process id of the parent (``os.getpid()`` before the fork).

    Returns:
        The function to pass as ``subprocess.Popen(preexec_fn=...)``.
    """

    def preexec() -> None:  # runs in the child between fork and exec
        with contextlib.suppress(Exception):
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:  # the parent died before prctl took hold: nobody will kill us
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


class Spawner:
    """The one long-lived daemon thread that forks every broker of this process.

    Linux sends ``PR_SET_PDEATHSIG`` when the *thread* that forked the child ends, not the
    process: a broker restarted from a short-lived fault-injection thread died with that thread.
    Forking from a thread that lives exactly as long as the process keeps the kernel's guarantee
    (the broker dies even if Python is SIGKILLed), which an atexit hook cannot give.
    """

    _lock = threading.Lock()
    _current: Spawner | None = None

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._requests: queue.SimpleQueue[
            tuple[Callable[[], subprocess.Popen[bytes]], Future[subprocess.Popen[bytes]]]
        ] = queue.SimpleQueue()
        self._thread = threading.Thread(
            target=self._serve, name="kafka-semantics-broker-spawner", daemon=True
        )
        self._thread.start()

    @classmethod
    def popen(cls, launch: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
        """Run ``launch`` (which forks) on the spawner thread and return its process.

        Raises:
            BaseException: Whatever ``launch`` raised, re-raised in the calling thread.
        """
        with cls._lock:
            spawner = cls._current
            # a forked child of this process inherits the singleton but not its thread
            if spawner is None or spawner.pid != os.getpid() or not spawner._thread.is_alive():
                spawner = cls._current = cls()
        future: Future[subprocess.Popen[bytes]] = Future()
        spawner._requests.put((launch, future))
        return future.result()

    def _serve(self) -> None:
        while True:
            launch, future = self._requests.get()
            try:
                future.set_result(launch())
            except BaseException as exc:  # handed to the caller, which re-raises it
                future.set_exception(exc)


def spawn_logged(cmd: list[str], log_path: Path, *, with_parent: bool) -> subprocess.Popen[bytes]:
    """Start ``cmd`` in its own session, its output appended to ``log_path``.

    ``with_parent``: the child gets SIGKILL when this process dies. PDEATHSIG follows the
    forking thread, so the fork then happens on the process-long :class:`Spawner` thread.
    """
    with open(log_path, "ab") as log:

        def launch() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                preexec_fn=die_with_parent(os.getpid()) if with_parent else None,
            )

        return Spawner.popen(launch) if with_parent else launch()
