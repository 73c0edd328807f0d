"""The JVM peers of the benchmarks: resolve a peer's jars with Maven, compile its one source.

A peer is a directory under ``benchmarks/`` with a ``pom.xml`` that only lists dependencies and
one ``.java`` file. The first use runs ``mvn dependency:copy-dependencies`` on the pom (the
library and its runtime dependencies from Maven Central) and ``javac`` on the source, both into
the project's cache (:func:`sdk.testing.tools.cache_root`); later runs find the completed cache
and touch neither Maven nor javac. The classes are keyed by a hash of the source, so an edited
app is compiled again. Used by :mod:`benchmarks._streams` and :mod:`benchmarks._parallel`.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks._harness import progress
from sdk.testing.tools import cache_root, find_java, find_mvn

_STAMP = ".complete"


@dataclass(frozen=True)
class PeerSource:
    """What to resolve and compile for one JVM peer."""

    label: str
    """The library, in messages: ``Kafka Streams 4.3.1``."""
    pom: Path
    source: Path
    cache_name: str
    """Its directory under the cache root (one per library version)."""
    jar_glob: str
    """A jar that must be among the resolved ones (Maven can succeed and copy nothing)."""
    properties: dict[str, str] = field(default_factory=dict)
    """``-D`` properties for Maven: the versions the pom is parametrised with."""


@dataclass(frozen=True)
class BuiltPeer:
    """A compiled peer: the ``java`` to run it with and its classpath."""

    java: str
    classpath: str


def javac(java: str, label: str) -> str:
    """The ``javac`` beside ``java`` (a JDK), else the one on PATH.

    Raises:
        RuntimeError: No javac: a JRE without the compiler.
    """
    beside = Path(os.path.realpath(java)).with_name("javac")
    found = str(beside) if beside.exists() else shutil.which("javac")
    if not found:
        raise RuntimeError(f"no javac beside {java} nor on PATH: the {label} peer needs a JDK")
    return found


def _resolve(peer: PeerSource, root: Path) -> Path:
    """The directory of the peer's runtime jars, resolved with Maven on first use.

    Raises:
        RuntimeError: Maven failed (the tail of its output is in the message).
        MavenError: No Maven, and the jars are not cached yet.
    """
    libs = root / "libs"
    if (libs / _STAMP).exists():
        return libs
    progress(f"resolving {peer.label} from Maven Central into {libs} ...")
    staging = Path(tempfile.mkdtemp(prefix="libs-", dir=root))
    cmd = [
        find_mvn(),
        "-B",
        "-f",
        str(peer.pom),
        *(f"-D{key}={value}" for key, value in peer.properties.items()),
        "dependency:copy-dependencies",
        f"-DoutputDirectory={staging}",
        "-DincludeScope=runtime",
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800, check=False)
    if proc.returncode != 0 or not any(staging.glob(peer.jar_glob)):
        shutil.rmtree(staging, ignore_errors=True)
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
        raise RuntimeError(f"Maven could not resolve {peer.label} ({' '.join(cmd)}):\n{tail}")
    if libs.exists():
        shutil.rmtree(libs)
    os.replace(staging, libs)
    (libs / _STAMP).write_text("\n".join(sorted(p.name for p in libs.glob("*.jar"))) + "\n")
    return libs


def _compile(peer: PeerSource, root: Path, java: str, classpath: str) -> Path:
    """The directory of the peer's classes, compiled on first use of this source.

    Raises:
        RuntimeError: javac failed, or there is none.
    """
    digest = hashlib.sha256(peer.source.read_bytes()).hexdigest()[:12]
    classes = root / f"classes-{digest}"
    if (classes / _STAMP).exists():
        return classes
    progress(f"compiling {peer.source.name} into {classes} ...")
    staging = Path(tempfile.mkdtemp(prefix="classes-", dir=root))
    cmd = [javac(java, peer.label), "-d", str(staging), "-cp", classpath, str(peer.source)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    if proc.returncode != 0:
        shutil.rmtree(staging, ignore_errors=True)
        raise RuntimeError(f"javac failed:\n{proc.stderr[-2000:]}")
    if classes.exists():
        shutil.rmtree(classes)
    os.replace(staging, classes)
    (classes / _STAMP).write_text(digest + "\n")
    return classes


def build(peer: PeerSource) -> BuiltPeer:
    """Resolve and compile the peer once (a file lock serialises concurrent first runs).

    Raises:
        RuntimeError: Maven or javac failed, or there is no javac.
        JavaNotFoundError: No Java 17+.
        MavenError: No Maven, and the jars are not cached yet.
    """
    java = find_java()
    root = cache_root() / peer.cache_name
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        libs = _resolve(peer, root)
        jars = str(libs / "*")
        classes = _compile(peer, root, java, jars)
    return BuiltPeer(java, f"{classes}{os.pathsep}{jars}")
