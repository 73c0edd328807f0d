"""One node of a :class:`~sdk.testing.cluster.LocalCluster`: its ports, files and process."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path

__all__ = ["Node", "NodeState"]


class NodeState(Enum):
    """Life-cycle state of one broker process."""

    NEW = "new"
    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"


@dataclass
class Node:
    """A combined broker+controller node: where it listens, where its files are, its process.

    ``process`` is set for a node this Python process started; a node re-opened by
    :meth:`~sdk.testing.cluster.LocalCluster.attach` has only its ``pid``.
    """

    node_id: int
    port: int
    controller_port: int
    directory: Path
    state: NodeState = NodeState.NEW
    extra_ports: dict[str, int] = field(default_factory=dict)
    pid: int | None = None
    process: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def log_path(self) -> Path:
        """The node's stdout and stderr (the broker's log)."""
        return self.directory / "server.log"

    @property
    def config_path(self) -> Path:
        """The node's ``server.properties``."""
        return self.directory / "server.properties"

    def alive(self) -> bool:
        """Return whether the node's process runs (a zombie does not)."""
        if self.process is not None:
            return self.process.poll() is None
        if self.pid is None:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        # a zombie (reaped by nobody) is not alive
        with contextlib.suppress(OSError):
            if Path(f"/proc/{self.pid}/stat").read_text().split()[2] == "Z":
                return False
        return True

    def log_tail(self, lines: int = 30) -> str:
        """Return the last ``lines`` lines of the node's log (for error messages)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log written)"
        return "\n".join(text.splitlines()[-lines:])

    def send_signal(self, sig: signal.Signals) -> None:
        """Send ``sig`` to the node's process group (nothing if it never started or is gone)."""
        if self.pid is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, sig)

    def wait_exit(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` seconds for the process to end; return whether it did."""
        if self.process is not None:
            try:
                self.process.wait(timeout=timeout_s)
                return True
            except subprocess.TimeoutExpired:
                return False
        deadline = time.monotonic() + timeout_s
        while self.alive():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True
