"""A real standalone Spark cluster and a Spark Connect server, from pyspark's own distribution.

Beside the Kafka harness (:mod:`sdk.testing.cluster`): :class:`StandaloneSpark` starts a master
and N workers as separate JVMs (``bin/spark-class``), so tasks run in executor processes that
can be SIGKILLed; :class:`ConnectServer` starts a Spark Connect server (the
``SparkConnectServer`` class of the ``spark-connect`` jar pyspark ships) on a loopback port,
over ``local[...]`` or a standalone master. Both listen on 127.0.0.1 only, write their logs
and work directories under a temporary directory, and are stopped (process group killed)
on exit.

Example::

    with StandaloneSpark(workers=2) as cluster:
        spark = cluster.session("job", jars=jars)      # a driver in this process
        ...
        cluster.kill_executor()                        # SIGKILL one executor JVM
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sdk._deprecation import renamed_default
from sdk.errors import ConfigurationError
from sdk.testing.tools import find_java

__all__ = ["ConnectServer", "StandaloneSpark", "spark_home"]

_EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"


def spark_home() -> Path:
    """The installation directory of pyspark (it is a complete Spark distribution)."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    java = find_java()
    env = dict(os.environ)
    env.update(
        {
            "SPARK_HOME": str(spark_home()),
            "JAVA_HOME": str(Path(java).resolve().parent.parent),
            "SPARK_LOCAL_IP": "127.0.0.1",
            "PYSPARK_PYTHON": sys.executable,
            "PYSPARK_DRIVER_PYTHON": sys.executable,
            "SPARK_NO_DAEMONIZE": "1",
        }
    )
    env.update(extra or {})
    return env


def _wait_for_line(log: Path, text: str, proc: subprocess.Popen[bytes], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log.exists() and text in log.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            raise RuntimeError(
                f"{log.name}: the process exited ({proc.returncode}) before {text!r}:\n"
                + log.read_text(errors="replace")[-3000:]
            )
        time.sleep(0.2)
    raise TimeoutError(f"{log.name}: no {text!r} within {timeout_s}s:\n" + _tail(log))


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:] if log.exists() else "(no log)"


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


class StandaloneSpark:
    """A standalone Spark master and ``workers`` workers, each its own JVM, on 127.0.0.1.

    Args:
        workers: How many workers (each runs one executor per application).
        cores: Cores each worker offers.
        memory: Memory each worker offers (``1g``).
        python_path: Prepended to ``PYTHONPATH`` of the workers' Python processes (the
            project's root, so executors import it).
    """

    def __init__(
        self,
        workers: int = 2,
        *,
        cores: int = 1,
        memory: str = "1g",
        python_path: Sequence[str] = (),
    ) -> None:
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self._tmp = Path(tempfile.mkdtemp(prefix="kafka-sem-spark-"))
        self._python_path = os.pathsep.join(
            [*python_path, *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])]
        )
        self._procs: list[subprocess.Popen[bytes]] = []
        self.port = _free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"

    def __enter__(self) -> StandaloneSpark:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _spawn(self, name: str, args: list[str]) -> tuple[subprocess.Popen[bytes], Path]:
        log = self._tmp / f"{name}.log"
        env = _env({"PYTHONPATH": self._python_path, "SPARK_WORKER_DIR": str(self._tmp / name)})
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                [str(spark_home() / "bin" / "spark-class"), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=self._tmp,
                start_new_session=True,  # its own process group: stopped as a whole
            )
        self._procs.append(proc)
        return proc, log

    def start(self, timeout_s: float = 90.0, *, timeout: float | None = None) -> None:
        """Start the master, then the workers; return once every worker has registered.

        Args:
            timeout_s: Seconds each process gets to come up.
            timeout: Deprecated name of ``timeout_s``, removed in 0.3.

        Raises:
            RuntimeError: A process exited early (its log tail is in the message).
            TimeoutError: A process did not come up within ``timeout_s``.
        """
        limit = renamed_default("StandaloneSpark.start", "timeout", timeout, "timeout_s", timeout_s)
        master, log = self._spawn(
            "master",
            [
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--webui-port",
                str(_free_port()),
            ],
        )
        _wait_for_line(log, "I have been elected leader", master, limit)
        for i in range(self.workers):
            proc, wlog = self._spawn(
                f"worker-{i}",
                [
                    "org.apache.spark.deploy.worker.Worker",
                    "--host",
                    "127.0.0.1",
                    "--cores",
                    str(self.cores),
                    "--memory",
                    self.memory,
                    "--webui-port",
                    str(_free_port()),
                    "--work-dir",
                    str(self._tmp / f"work-{i}"),
                    self.master_url,
                ],
            )
            _wait_for_line(wlog, "Successfully registered with master", proc, limit)

    def stop(self) -> None:
        """Stop the workers (and their executors), then the master."""
        for proc in reversed(self._procs):
            _stop(proc)
        self._procs.clear()

    def executor_pids(self) -> list[int]:
        """PIDs of the executor JVMs running now (children of this cluster's workers)."""
        workers = {p.pid for p in self._procs[1:] if p.poll() is None}
        pids = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmd = (entry / "cmdline").read_bytes()
                # the parent PID is the field after the parenthesised command name
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
            if ppid in workers and _EXECUTOR_CLASS.encode() in cmd:
                pids.append(int(entry.name))
        return sorted(pids)

    def kill_executor(self) -> int:
        """SIGKILL one running executor JVM; return its PID.

        Raises:
            RuntimeError: No executor is running.
        """
        pids = self.executor_pids()
        if not pids:
            raise RuntimeError("no executor JVM is running on this cluster")
        os.kill(pids[0], signal.SIGKILL)
        return pids[0]

    def logs(self) -> str:
        """The tails of every process log (for a failing test's message)."""
        return "\n".join(f"== {p.name}\n{_tail(p)}" for p in sorted(self._tmp.glob("*.log")))


class ConnectServer:
    """A Spark Connect server on 127.0.0.1 (``sc://127.0.0.1:PORT``) running as its own JVM.

    Args:
        master: The server's own master: ``local[N,F]`` or a standalone ``spark://`` URL.
        jars: Jars for the server (e.g. the Kafka connector).
        python_path: Prepended to ``PYTHONPATH`` of its Python workers (the project's root).
        conf: More Spark settings for the server.
    """

    def __init__(
        self,
        master: str = "local[2,4]",
        *,
        jars: Sequence[Path | str] = (),
        python_path: Sequence[str] = (),
        conf: Mapping[str, str] | None = None,
    ) -> None:
        self.master = master
        self.jars = [str(j) for j in jars]
        self.port = _free_port()
        self.url = f"sc://127.0.0.1:{self.port}"
        self._conf = dict(conf or {})
        self._python_path = os.pathsep.join(
            [*python_path, *([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])]
        )
        self._tmp = Path(tempfile.mkdtemp(prefix="kafka-sem-connect-"))
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> ConnectServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, timeout_s: float = 120.0, *, timeout: float | None = None) -> None:
        """Start the server; return once it accepts connections.

        Args:
            timeout_s: Seconds the server gets to listen.
            timeout: Deprecated name of ``timeout_s``, removed in 0.3.

        Raises:
            ConfigurationError: pyspark has no spark-connect jar.
            RuntimeError: The server exited early (its log tail is in the message).
            TimeoutError: It did not listen within ``timeout_s``.
        """
        limit = renamed_default("ConnectServer.start", "timeout", timeout, "timeout_s", timeout_s)
        connect = sorted((spark_home() / "jars").glob("spark-connect_*.jar"))
        if not connect:
            raise ConfigurationError(
                f"no spark-connect jar in {spark_home() / 'jars'}: install pyspark >= 4 "
                "(its distribution ships the Connect server)",
                field="pyspark",
            )
        conf = {
            "spark.connect.grpc.binding.address": "127.0.0.1",
            "spark.connect.grpc.binding.port": str(self.port),
            "spark.ui.enabled": "false",
            "spark.speculation": "false",
            "spark.executorEnv.PYTHONPATH": self._python_path,
            **self._conf,
        }
        args = [
            str(spark_home() / "bin" / "spark-submit"),
            "--master",
            self.master,
            "--class",
            "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--name",
            "kafka-semantics Spark Connect",
        ]
        if self.jars:
            args += ["--jars", ",".join(self.jars)]
        for key, value in conf.items():
            args += ["--conf", f"{key}={value}"]
        args.append(str(connect[0]))
        log = self._tmp / "connect.log"
        with open(log, "wb") as out:
            self._proc = subprocess.Popen(
                args,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=_env({"PYTHONPATH": self._python_path}),
                cwd=self._tmp,
                start_new_session=True,
            )
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"the Spark Connect server exited ({self._proc.returncode}):\n{_tail(log)}"
                )
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.3)
        raise TimeoutError(f"Spark Connect did not listen within {limit}s:\n{_tail(log)}")

    def session(self) -> Any:
        """A Spark Connect client session for this server."""
        from pyspark.sql import SparkSession

        return SparkSession.builder.remote(self.url).getOrCreate()

    def stop(self) -> None:
        """Stop the server (and the executors it started)."""
        if self._proc is not None:
            _stop(self._proc)
            self._proc = None

    def log(self) -> str:
        """The tail of the server's log."""
        return _tail(self._tmp / "connect.log")
