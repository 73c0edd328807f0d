"""Toxiproxy, the TCP fault proxy: its server binary, built once into the cache, and a REST client.

``toxiproxy-server`` (Shopify/toxiproxy, pinned to :data:`TOXIPROXY_VERSION`) is found, in this
order, at ``$KSEM_TOXIPROXY``, in the cache (``~/.cache/kafka-semantics/toxiproxy-<version>``,
see :func:`sdk.testing.tools.cache_root`) or on ``PATH``. :func:`install_toxiproxy` builds it into
the cache with ``go install`` from the Go module proxy when none is found (about a minute, once),
as the broker jars are resolved with Maven. From the shell::

    python -m sdk.testing.toxiproxy install      # locate or build it; prints its path
    python -m sdk.testing.toxiproxy path         # prints its path, exit 1 if none is installed

:class:`ToxiproxyClient` speaks the server's HTTP API (``/proxies``, ``/proxies/{name}/toxics``)
with the standard library. :class:`sdk.testing.cluster.LocalCluster` runs a server and one proxy
per broker with ``network_faults=True``.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

from sdk.testing.errors import ClusterError, PortInUseError
from sdk.testing.tools import cache_root

__all__ = [
    "INSTALL_HINT",
    "TOXIPROXY_VERSION",
    "Direction",
    "ToxiproxyClient",
    "find_toxiproxy",
    "install_toxiproxy",
    "main",
]

TOXIPROXY_VERSION = "v2.5.0"
"""The Toxiproxy release the harness builds and runs."""

MIN_GO = (1, 22)
"""The oldest Go that builds it here."""

INSTALL_HINT = (
    "install Go ≥ 1.22 or put toxiproxy-server on PATH / set KSEM_TOXIPROXY "
    "(then 'python -m sdk.testing.toxiproxy install', or './dev.sh setup', builds it once)"
)
"""What to do when no ``toxiproxy-server`` can be found or built."""

Direction = Literal["upstream", "downstream"]
"""A toxic's link: ``upstream`` is client → server, ``downstream`` server → client."""

_MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
_BINARY = "toxiproxy-server"
_ENV = "KSEM_TOXIPROXY"
_GO_VERSION = re.compile(r"go(\d+)\.(\d+)")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _cached(cache_dir: Path | None) -> Path:
    return (cache_dir or cache_root()) / f"toxiproxy-{TOXIPROXY_VERSION}" / _BINARY


def find_toxiproxy(explicit: str | None = None, *, cache_dir: Path | None = None) -> str | None:
    """Return the path of a ``toxiproxy-server`` without building one, or None.

    Order: ``explicit``, ``$KSEM_TOXIPROXY``, the cache, ``toxiproxy-server`` on ``PATH``.

    Args:
        explicit: A path that must be used.
        cache_dir: Cache root; default :func:`sdk.testing.tools.cache_root`.

    Returns:
        The executable's path, or None if there is none.

    Raises:
        ClusterError: ``explicit`` or ``$KSEM_TOXIPROXY`` names something that is not an
            executable.
    """
    named = explicit or os.environ.get(_ENV)
    if named:
        found = shutil.which(named)
        if not found:
            source = "the toxiproxy argument" if explicit else _ENV
            raise ClusterError(
                f"{source} names '{named}', which is not an executable toxiproxy-server. "
                f"Point it at one, or unset it and {INSTALL_HINT}."
            )
        return found
    cached = _cached(cache_dir)
    if os.access(cached, os.X_OK):
        return str(cached)
    return shutil.which(_BINARY)


def _find_go(go: str | None) -> str:
    """Find a Go toolchain of at least :data:`MIN_GO`.

    Raises:
        ClusterError: None is found, or it is too old.
    """
    candidates = [go] if go else ["go", "/usr/local/go/bin/go"]
    if os.environ.get("GOROOT"):
        candidates.append(str(Path(os.environ["GOROOT"]) / "bin" / "go"))
    found = next((p for p in map(shutil.which, candidates) if p), None)
    if not found:
        raise ClusterError(
            f"No toxiproxy-server found, and no Go toolchain to build it: {INSTALL_HINT}."
        )
    try:
        proc = subprocess.run(
            [found, "env", "GOVERSION"], capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ClusterError(
            f"Could not run '{found} env GOVERSION' ({exc}): {INSTALL_HINT}."
        ) from exc
    match = _GO_VERSION.search(proc.stdout)
    if not match or (int(match.group(1)), int(match.group(2))) < MIN_GO:
        raise ClusterError(
            f"'{found}' is {proc.stdout.strip() or 'of an unknown version'}, too old to build "
            f"toxiproxy-server: {INSTALL_HINT}."
        )
    return found


def install_toxiproxy(
    *,
    cache_dir: Path | None = None,
    go: str | None = None,
    progress: Callable[[str], None] = _stderr,
) -> str:
    """Return a ``toxiproxy-server``, building it into the cache with Go on first use.

    Safe to call from several processes at once (a file lock serialises the build).

    Args:
        cache_dir: Cache root; default :func:`sdk.testing.tools.cache_root`.
        go: Path of the ``go`` executable (default: ``go`` on ``PATH``, then
            ``/usr/local/go/bin/go``, then ``$GOROOT/bin/go``).
        progress: Receives human-readable progress lines (default: stderr).

    Returns:
        The executable's path.

    Raises:
        ClusterError: None is installed and Go is missing or too old, or the build failed
            (with the tail of Go's output).
    """
    found = find_toxiproxy(cache_dir=cache_dir)
    if found:
        return found
    target = _cached(cache_dir)
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.access(target, os.X_OK):  # another process built it while we waited
            return str(target)
        go_path = _find_go(go)
        progress(
            f"kafka-semantics: building toxiproxy-server {TOXIPROXY_VERSION} with {go_path} into "
            f"{target.parent} (first run only, about a minute)..."
        )
        started = time.monotonic()
        staging = Path(tempfile.mkdtemp(prefix="bin-", dir=target.parent))
        try:
            _go_install(go_path, staging)
            os.replace(staging / "server", target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        progress(f"kafka-semantics: toxiproxy-server built in {time.monotonic() - started:.1f}s.")
    return str(target)


def _go_install(go: str, bin_dir: Path) -> None:
    # a static binary (no C compiler needed), with the Go that was found: no toolchain download
    env = {**os.environ, "GOBIN": str(bin_dir), "CGO_ENABLED": "0", "GOTOOLCHAIN": "local"}
    cmd = [go, "install", f"{_MODULE}@{TOXIPROXY_VERSION}"]
    try:
        proc = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=1800, check=False
        )
    except subprocess.TimeoutExpired as exc:
        raise ClusterError(
            f"'{' '.join(cmd)}' did not finish within 30 minutes. Check that the Go module proxy "
            f"is reachable (GOPROXY, GOFLAGS), or {INSTALL_HINT}."
        ) from exc
    if proc.returncode != 0 or not (bin_dir / "server").exists():
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise ClusterError(
            f"Building toxiproxy-server failed (exit code {proc.returncode}). Check that the Go "
            f"module proxy is reachable (GOPROXY), or {INSTALL_HINT}. Command: {' '.join(cmd)}\n"
            f"Last lines of its output:\n{tail}"
        )


class ToxiproxyClient:
    """The HTTP API of one ``toxiproxy-server``; every failure is a :class:`ClusterError`.

    Args:
        url: The server's API address, e.g. ``http://127.0.0.1:8474``.
        timeout_s: Seconds one request may take.
    """

    def __init__(self, url: str, *, timeout_s: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self._timeout_s = timeout_s

    def _request(
        self, method: str, path: str, body: Mapping[str, Any] | None = None, *, accept: int = 0
    ) -> tuple[int, Any]:
        """Send one request; return (status, decoded JSON or None).

        Raises:
            ClusterError: The server cannot be reached, or it answered with an error status
                other than ``accept``.
        """
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=self._timeout_s) as response:
                status, text = response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            status, text = exc.code, exc.read().decode(errors="replace")
            if status != accept:
                raise ClusterError(
                    f"toxiproxy {method} {path} answered {status}: {text.strip()}"
                ) from exc
        except (urllib.error.URLError, OSError) as exc:
            raise ClusterError(
                f"toxiproxy at {self.url} did not answer {method} {path}: {exc}"
            ) from exc
        try:
            return status, json.loads(text) if text.strip() else None
        except ValueError:  # /version answers in plain text
            return status, text.strip()

    def version(self) -> str:
        """Return the server's version (raises :class:`ClusterError` if it does not answer)."""
        _, body = self._request("GET", "/version")
        return str(body)

    def proxies(self) -> dict[str, Any]:
        """Return every proxy, by name, with its toxics."""
        _, body = self._request("GET", "/proxies")
        return dict(body or {})

    def create_proxy(self, name: str, listen: str, upstream: str) -> dict[str, Any]:
        """Create an enabled proxy ``name`` listening on ``listen`` in front of ``upstream``.

        Raises:
            PortInUseError: ``listen`` is taken.
            ClusterError: Any other refusal (e.g. the name exists).
        """
        body = {"name": name, "listen": listen, "upstream": upstream, "enabled": True}
        try:
            _, created = self._request("POST", "/proxies", body)
        except ClusterError as exc:
            if "address already in use" in str(exc):
                raise PortInUseError(
                    f"Port {listen} is already in use, so toxiproxy cannot listen on it for "
                    f"{name}; another process took it after it was chosen."
                ) from exc
            raise
        return dict(created)

    def delete_proxy(self, name: str) -> None:
        """Delete proxy ``name`` (closing its connections); a missing one is no error."""
        self._request("DELETE", f"/proxies/{quote(name)}", accept=404)

    def set_enabled(self, name: str, enabled: bool) -> None:
        """Enable or disable proxy ``name``.

        A disabled proxy closes every connection through it and stops listening, so new
        connections are refused.
        """
        self._request("POST", f"/proxies/{quote(name)}", {"enabled": enabled})

    def toxics(self, proxy: str) -> list[dict[str, Any]]:
        """Return the toxics of ``proxy``."""
        _, body = self._request("GET", f"/proxies/{quote(proxy)}/toxics")
        return list(body or [])

    def add_toxic(
        self,
        proxy: str,
        kind: str,
        attributes: Mapping[str, Any],
        *,
        stream: Direction = "downstream",
        name: str | None = None,
        toxicity: float = 1.0,
    ) -> dict[str, Any]:
        """Add a toxic to ``proxy``, or update the one of that name.

        Args:
            proxy: The proxy's name.
            kind: The toxic's type (``latency``, ``bandwidth``, ``timeout``, ``reset_peer``,
                ``slow_close``, ``slicer``, ``limit_data``).
            attributes: Its attributes, e.g. ``{"latency": 300, "jitter": 100}``.
            stream: The link it acts on.
            name: Its name (default ``<kind>_<stream>``, as toxiproxy names it).
            toxicity: The share of connections it affects (0.0 - 1.0).

        Returns:
            The toxic as the server stored it.
        """
        toxic = name or f"{kind}_{stream}"
        body = {
            "name": toxic,
            "type": kind,
            "stream": stream,
            "toxicity": toxicity,
            "attributes": dict(attributes),
        }
        path = f"/proxies/{quote(proxy)}/toxics"
        status, stored = self._request("POST", path, body, accept=409)
        if status == 409:  # it exists: change its attributes instead
            _, stored = self._request(
                "POST", f"{path}/{quote(toxic)}", {"attributes": dict(attributes)}
            )
        return dict(stored)

    def remove_toxic(self, proxy: str, name: str) -> None:
        """Remove toxic ``name`` of ``proxy``; a missing one is no error."""
        self._request("DELETE", f"/proxies/{quote(proxy)}/toxics/{quote(name)}", accept=404)

    def reset(self) -> None:
        """Enable every proxy and remove every toxic."""
        self._request("POST", "/reset")

    def __repr__(self) -> str:
        return f"ToxiproxyClient({self.url!r})"


def main(argv: list[str] | None = None) -> int:
    """Run the Toxiproxy CLI (``install``, ``path``); returns the process exit code."""
    parser = argparse.ArgumentParser(prog="python -m sdk.testing.toxiproxy")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="locate toxiproxy-server or build it (Go) into the cache")
    sub.add_parser("path", help="print the toxiproxy-server in use; exit 1 if there is none")
    args = parser.parse_args(argv)
    try:
        found = install_toxiproxy() if args.command == "install" else find_toxiproxy()
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if found is None:
        print(f"no toxiproxy-server: {INSTALL_HINT}", file=sys.stderr)
        return 1
    print(found)
    return 0


if __name__ == "__main__":
    sys.exit(main())
