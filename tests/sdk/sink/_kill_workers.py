"""Worker processes of the sink kill tests: start, signal, read the counters they dump."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.sdk.consumer._support import ROOT, wait_for


class Proc:
    """One incarnation of a worker process."""

    def __init__(self, name: str, incarnation: int, args: dict[str, Any], control: Path) -> None:
        self.name = name
        self.wid = f"{name}{incarnation}"
        self.control = control
        self.log = control / f"log-{self.wid}.txt"
        with self.log.open("wb") as log:
            self.popen = subprocess.Popen(
                [sys.executable, "-m", "tests.sdk.sink.sink_worker", json.dumps(args)],
                cwd=ROOT,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        self.pid = self.popen.pid

    def stats(self) -> dict[str, Any]:
        """The worker's latest counters ({} before its first dump)."""
        try:
            data: dict[str, Any] = json.loads((self.control / f"stats-{self.wid}.json").read_text())
        except (OSError, ValueError):
            return {}
        return data

    def alive(self) -> bool:
        return self.popen.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        os.kill(self.pid, sig)

    def stopped(self) -> bool:
        """Whether the process is stopped (state ``T`` in /proc)."""
        stat = Path(f"/proc/{self.pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] == "T"

    def terminate(self, timeout: float) -> int:
        """SIGTERM (the sink stops after its batch and the worker writes its final stats)."""
        if self.alive():
            self.signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"worker {self.wid} did not stop {timeout}s after SIGTERM; its log:\n{self.tail()}"
            ) from None

    def tail(self, lines: int = 25) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])


class Workers:
    """The worker processes of a run: the live ones, and every incarnation for the counters."""

    def __init__(self, base: dict[str, Any], control: Path) -> None:
        self.base = base
        self.control = control
        self.live: dict[str, Proc] = {}
        self.every: list[Proc] = []
        self._incarnations: dict[str, int] = {}

    def start(self, name: str, *, static: bool) -> Proc:
        incarnation = self._incarnations.get(name, 0) + 1
        self._incarnations[name] = incarnation
        args = {**self.base, "wid": f"{name}{incarnation}"}
        if static:  # a restart takes the killed member's place without a rebalance
            args["instance"] = f"{self.base['group']}-{name}"
        proc = Proc(name, incarnation, args, self.control)
        self.live[name] = proc
        self.every.append(proc)
        return proc

    def check_alive(self) -> None:
        for proc in self.live.values():
            if not proc.alive():
                raise AssertionError(
                    f"worker {proc.wid} exited on its own (code {proc.popen.returncode}):\n"
                    f"{proc.tail()}"
                )

    def wait_working(self, proc: Proc, timeout: float = 60.0) -> None:
        """Until ``proc`` committed a transaction (it joined, claimed and wrote)."""

        def working() -> bool:
            self.check_alive()
            return int(proc.stats().get("transactions", 0)) >= 1

        wait_for(working, timeout, f"worker {proc.wid} to commit its first transaction", 0.1)

    def totals(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for proc in self.every:
            for key, value in proc.stats().items():
                if isinstance(value, int) and not isinstance(value, bool) and key != "pid":
                    out[key] = out.get(key, 0) + value
        return out

    def kill_all(self) -> None:
        for proc in self.every:
            if proc.alive():
                with contextlib.suppress(OSError):
                    proc.signal(signal.SIGCONT)
                    proc.signal(signal.SIGKILL)
                proc.popen.wait(10)

    def tails(self) -> str:
        return "\n".join(f"--- {p.wid} (pid {p.pid})\n{p.tail()}" for p in self.every)
