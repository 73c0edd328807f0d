"""A real schema registry for tests and examples: Apicurio Registry, resolved, cached and started.

Apicurio Registry (:data:`APICURIO_VERSION`) comes from Maven Central as one ``tar.gz``
(``io.apicurio:apicurio-registry-app``, classifier ``all``, about 160 MB), fetched once with
``mvn dependency:copy`` and unpacked into the cache (``apicurio-<version>`` under
:func:`sdk.testing.tools.cache_root`), as the broker jars are. It is a Quarkus application
that needs Java 21 or newer (:func:`find_registry_java`); the brokers keep their own JDK.

:class:`SchemaRegistryServer` runs one on a free port and serves the Confluent-compatible API at
``http://127.0.0.1:<port>/apis/ccompat/v7`` (its :attr:`~SchemaRegistryServer.url`, what
confluent-kafka's ``SchemaRegistryClient`` takes). Its storage is an H2 database in a file of its
work directory, so :meth:`~SchemaRegistryServer.stop` then :meth:`~SchemaRegistryServer.start`
(a registry outage) keeps the port and every schema and id. From the shell::

    python -m sdk.testing.registry fetch     # resolve and cache it; prints its directory
    python -m sdk.testing.registry up        # start one in the background; prints its URL
    python -m sdk.testing.registry down      # stop it
"""

from __future__ import annotations

import argparse
import fcntl
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable
from pathlib import Path

from sdk.testing.cluster._config import free_ports
from sdk.testing.cluster._spawner import spawn_logged
from sdk.testing.errors import ClusterError, JavaNotFoundError, MavenError, PortInUseError
from sdk.testing.tools import cache_root, find_mvn, java_major_version

__all__ = [
    "APICURIO_ARTIFACT",
    "APICURIO_VERSION",
    "MIN_REGISTRY_JAVA",
    "SchemaRegistryServer",
    "find_registry_java",
    "main",
    "resolve_registry",
]

APICURIO_VERSION = "3.3.3"
"""The Apicurio Registry release the harness runs."""

APICURIO_ARTIFACT = f"io.apicurio:apicurio-registry-app:{APICURIO_VERSION}:tar.gz:all"
"""Its Maven coordinates (groupId:artifactId:version:type:classifier)."""

MIN_REGISTRY_JAVA = 21
"""Apicurio Registry 3 is compiled for Java 21 (class version 65)."""

CCOMPAT_PATH = "/apis/ccompat/v7"
"""Where Apicurio serves the Confluent Schema Registry API."""

_JAVA_ENV = "KSEM_REGISTRY_JAVA"
# where JDKs are usually installed, after the explicit settings and PATH
_JDK_GLOBS = (
    "/usr/lib/jvm/*/bin/java",
    "/opt/java/*/bin/java",
    "/opt/*/bin/java",
    "/Library/Java/JavaVirtualMachines/*/Contents/Home/bin/java",
    str(Path.home() / ".sdkman/candidates/java/*/bin/java"),
)
_STAMP = ".complete"


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _java_candidates(explicit: str | None) -> Iterable[tuple[str, str]]:
    """(where it came from, path) in the order they are tried."""
    if explicit:
        yield "the java argument", explicit
    if os.environ.get(_JAVA_ENV):
        yield _JAVA_ENV, os.environ[_JAVA_ENV]
    if os.environ.get("JAVA_HOME"):
        yield "JAVA_HOME", str(Path(os.environ["JAVA_HOME"]) / "bin" / "java")
    on_path = shutil.which("java")
    if on_path:
        yield "PATH", on_path
    for pattern in _JDK_GLOBS:
        for path in sorted(glob.glob(pattern), reverse=True):  # newest-looking first
            yield pattern, path


def find_registry_java(java: str | None = None) -> str:
    """Find a Java runtime of version 21 or newer for the registry.

    Order: the ``java`` argument, ``$KSEM_REGISTRY_JAVA``, ``$JAVA_HOME/bin/java``, ``java`` on
    ``PATH``, then the usual JDK directories (``/usr/lib/jvm/*``, ``/opt/java/*``, macOS's
    ``JavaVirtualMachines``, SDKMAN). An explicit one (argument or variable) must be suitable.

    Returns:
        The path of a suitable ``java``.

    Raises:
        JavaNotFoundError: None is found (the message lists each one looked at, and its
            version).
    """
    seen: list[str] = []
    for source, path in _java_candidates(java):
        found = shutil.which(path)
        if not found:
            seen.append(f"{path} ({source}): not an executable")
            continue
        try:
            major = java_major_version(found)
        except JavaNotFoundError:
            seen.append(f"{found} ({source}): its version could not be read")
            continue
        if major >= MIN_REGISTRY_JAVA:
            return found
        seen.append(f"{found} ({source}): Java {major}")
        if source in ("the java argument", _JAVA_ENV):
            break  # named on purpose: do not silently run another
    looked = "; ".join(seen) or "no java at all"
    raise JavaNotFoundError(
        f"The schema registry (Apicurio Registry {APICURIO_VERSION}) needs Java "
        f"{MIN_REGISTRY_JAVA}+, and none was found. Looked at: {looked}. Install a JDK 21 or "
        f"newer (Debian/Ubuntu: 'apt-get install openjdk-21-jre-headless') or set {_JAVA_ENV} "
        "to its java binary; the Kafka brokers keep using their own Java 17+."
    )


def resolve_registry(
    *,
    cache_dir: Path | None = None,
    mvn: str | None = None,
    progress: Callable[[str], None] = _stderr,
) -> Path:
    """Return the unpacked Apicurio Registry directory, fetching it with Maven on first use.

    Safe to call from several processes at once (a file lock serialises the first resolution).

    Args:
        cache_dir: Cache root; default :func:`sdk.testing.tools.cache_root`.
        mvn: Path of the Maven executable (default: found on ``PATH``).
        progress: Receives human-readable progress lines (default: stderr).

    Returns:
        The directory holding ``quarkus-run.jar``.

    Raises:
        MavenError: Maven is missing, or it could not fetch the archive.
    """
    root = (cache_dir or cache_root()) / f"apicurio-{APICURIO_VERSION}"
    app = root / "app"
    if (app / _STAMP).exists():
        return app
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (app / _STAMP).exists():  # another process finished it while we waited
            return app
        mvn_path = find_mvn(mvn)
        progress(
            f"kafka-semantics: fetching Apicurio Registry {APICURIO_VERSION} (about 160 MB) from "
            f"Maven Central into {app} (first run only)..."
        )
        started = time.monotonic()
        staging = Path(tempfile.mkdtemp(prefix="app-", dir=root))
        try:
            archive = _fetch_archive(mvn_path, staging)
            with tarfile.open(archive) as tar:
                tar.extractall(staging / "unpacked", filter="data")
            if not (staging / "unpacked" / "quarkus-run.jar").exists():
                raise MavenError(
                    f"{archive.name} holds no quarkus-run.jar; delete {root} and try again."
                )
            if app.exists():
                shutil.rmtree(app)
            os.replace(staging / "unpacked", app)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        (app / _STAMP).write_text(APICURIO_ARTIFACT + "\n")
        progress(f"kafka-semantics: registry fetched in {time.monotonic() - started:.1f}s.")
    return app


def _fetch_archive(mvn: str, staging: Path) -> Path:
    cmd = [
        mvn,
        "-B",
        "-q",
        "dependency:copy",
        f"-Dartifact={APICURIO_ARTIFACT}",
        f"-DoutputDirectory={staging}",
    ]
    try:
        # its own cwd: dependency:copy needs no project, and must not pick one up
        proc = subprocess.run(
            cmd, cwd=staging, capture_output=True, text=True, timeout=1800, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise MavenError(
            f"Maven did not fetch {APICURIO_ARTIFACT} within 30 minutes. Check that Maven "
            "Central is reachable (proxy settings live in ~/.m2/settings.xml) and try again."
        ) from exc
    archives = list(staging.glob("*.tar.gz"))
    if proc.returncode != 0 or not archives:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise MavenError(
            f"Maven could not fetch {APICURIO_ARTIFACT} (exit code {proc.returncode}). Check "
            "that Maven Central is reachable (proxy settings live in ~/.m2/settings.xml), then "
            f"try again. Command: {' '.join(cmd)}\nLast lines of Maven's output:\n{tail}"
        )
    return archives[0]


def _check_port_free(port: int) -> None:
    """Fail early if something listens on ``port``.

    With ``SO_REUSEADDR``, as the registry binds: after a stop the port lingers in TIME_WAIT,
    which must not keep the registry from coming back on it.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError as exc:
            raise PortInUseError(
                f"Port {port} on 127.0.0.1 is already in use, so the schema registry cannot "
                "listen on it. Stop whatever holds it (see 'ss -ltnp') or pass no port."
            ) from exc


class SchemaRegistryServer:
    """One Apicurio Registry process on 127.0.0.1, restartable on the same port with its schemas.

    Args:
        port: The HTTP port (default: a free one, kept across restarts).
        workdir: Its storage and log (default: a temporary directory, removed by :meth:`close`).
        java: The ``java`` to run it with (default: :func:`find_registry_java`).
        heap: JVM ``-Xmx``.
        start_timeout_s: Seconds :meth:`start` waits for the API to answer.
        die_with_parent: The registry gets SIGKILL when this process dies (off for the CLI).

    Raises:
        JavaNotFoundError: No Java 21+ (at construction, before anything is fetched).
    """

    def __init__(
        self,
        port: int | None = None,
        *,
        workdir: Path | None = None,
        java: str | None = None,
        heap: str = "512m",
        start_timeout_s: float = 120.0,
        die_with_parent: bool = True,
    ) -> None:
        self.java = find_registry_java(java)
        self.port = port or free_ports(1)[0]
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="ksem-registry-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._heap = heap
        self._start_timeout = start_timeout_s
        self._with_parent = die_with_parent
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The Confluent-compatible API: what ``SchemaRegistryClient({"url": ...})`` takes."""
        return f"http://127.0.0.1:{self.port}{CCOMPAT_PATH}"

    @property
    def log_path(self) -> Path:
        """The registry's console output (appended across restarts)."""
        return self.workdir / "registry.log"

    def __enter__(self) -> SchemaRegistryServer:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def is_running(self) -> bool:
        """Whether the process is alive (not whether it answers yet)."""
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> None:
        """Start it (fetching it on first use) and wait until its API answers.

        Raises:
            MavenError: It could not be fetched.
            PortInUseError: Its port is taken.
            ClusterError: It exited, or did not answer within ``start_timeout_s`` (the message
                holds the tail of its log).
        """
        if self.is_running():
            return
        app = resolve_registry()
        _check_port_free(self.port)
        cmd = [
            self.java,
            f"-Xmx{self._heap}",
            f"-Dquarkus.http.port={self.port}",
            "-Dquarkus.http.host=127.0.0.1",
            # a file, not the default in-memory H2: a restart keeps every schema and its id
            f"-Dapicurio.datasource.url=jdbc:h2:file:{self.workdir / 'db'}",
            '-Dquarkus.log.category."io.quarkus.http.access-log".level=WARN',
            "-jar",
            str(app / "quarkus-run.jar"),
        ]
        self._proc = spawn_logged(cmd, self.log_path, with_parent=self._with_parent)
        self._wait_ready()

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self._start_timeout
        while time.monotonic() < deadline:
            if not self.is_running():
                raise ClusterError(
                    f"the schema registry exited during start (code "
                    f"{self._proc.returncode if self._proc else '?'}):\n{self._log_tail()}"
                )
            if self.answers():
                return
            time.sleep(0.25)
        self.stop()
        raise ClusterError(
            f"the schema registry did not answer at {self.url}/subjects within "
            f"{self._start_timeout:.0f}s:\n{self._log_tail()}"
        )

    def answers(self, timeout_s: float = 2.0) -> bool:
        """Whether ``GET /subjects`` answers 200 now."""
        try:
            with urllib.request.urlopen(f"{self.url}/subjects", timeout=timeout_s) as resp:
                return bool(resp.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def _log_tail(self, lines: int = 20) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def stop(self, *, kill: bool = False) -> None:
        """Stop the process (SIGTERM, or SIGKILL with ``kill``); port and storage stay."""
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        """Stop it and remove its work directory if this object made it."""
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __repr__(self) -> str:
        return f"SchemaRegistryServer(url={self.url!r}, running={self.is_running()})"


def _state_dir() -> Path:
    return cache_root() / "registry"


def _up(args: argparse.Namespace) -> int:
    state = _state_dir() / "state.json"
    if state.exists():
        old = json.loads(state.read_text())
        if _alive(old["pid"]):
            print(
                f"a registry is already running at {old['url']} "
                "(stop it with: python -m sdk.testing.registry down)",
                file=sys.stderr,
            )
            return 1
    shutil.rmtree(_state_dir(), ignore_errors=True)
    server = SchemaRegistryServer(args.port, workdir=_state_dir() / "data", die_with_parent=False)
    server.start()
    assert server._proc is not None  # started just above
    state.write_text(json.dumps({"pid": server._proc.pid, "url": server.url}))
    print(server.url)
    print(
        f"# point the serializers at it: export KSEM_SCHEMA_REGISTRY_URL={server.url}",
        file=sys.stderr,
    )
    return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def _down(args: argparse.Namespace) -> int:
    state = _state_dir() / "state.json"
    if not state.exists():
        print("no registry is running", file=sys.stderr)
        return 0
    pid = int(json.loads(state.read_text())["pid"])
    if _alive(pid):
        os.killpg(pid, signal.SIGTERM)  # its own session: the JVM and nothing else
        for _ in range(120):
            if not _alive(pid):
                break
            time.sleep(0.25)
    shutil.rmtree(_state_dir(), ignore_errors=True)
    print("registry stopped", file=sys.stderr)
    return 0


def _fetch(args: argparse.Namespace) -> int:
    print(resolve_registry())
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m sdk.testing.registry up [--port N] | down | fetch``; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m sdk.testing.registry")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start a registry in the background and print its URL")
    up.add_argument("--port", type=int, default=None)
    sub.add_parser("down", help="stop the registry started with 'up'")
    sub.add_parser("fetch", help="only resolve (and cache) the registry")
    args = parser.parse_args(argv)
    commands = {"up": _up, "down": _down, "fetch": _fetch}
    try:
        return commands[args.command](args)
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
