"""The layers of ``sdk`` and ``spark_integration``: no cycle, no import upward, no reach-in.

The import graph is built from the source with ``ast`` (nothing is imported): every ``import``
and ``from ... import`` of every module, at module level and inside functions and classes, and
those inside an ``if TYPE_CHECKING:`` block too: an import made for annotations only is still a
dependency of the design (the Producer once reached the transactional session, the layer above
it, and the session imported the Producer only for its annotations; counted, that circle shows
up here). A part is a package (``sdk.producer``, ``sdk.core``), a top-level module
(``sdk.errors``), or ``spark_integration`` as a whole.

The layer table (docs/architecture.md, "The layers"):

L0  errors, _client, _message, _admin (the seam and its Protocols), records, lifecycle,
    failure (the failure policy and the dead-letter format), recovery (the recovery decision),
    profiles, partitioners, assignors, observability, serialization, and the small top-level
    helpers
L1  producer, consumer, doctor: one client each, translated
L2  core (the transactional session): the guarantee machinery
L3  processor, queue, sink, aio: the front ends
L4  ``sdk`` itself (the public facade), ``sdk.__main__`` (the command line) and
    ``spark_integration`` (Spark jobs over the Processor and the session) sit on top;
    ``sdk.testing`` is opt-in and never imported by L0-L4.

A part may import its own layer or one below; parts of one layer must not import each other in
a circle.

A module may not reach into another package's private modules or names: an import whose path
has a ``_``-prefixed segment (``sdk.consumer._failure``, ``sdk.profiles._base.ProfileModel``)
is allowed only from inside the package that holds that segment (``sdk.consumer`` for
``sdk.consumer._failure``; every ``sdk`` module for ``sdk._client``). What a package offers
its siblings it offers from a module without a ``_`` (its ``__init__``, in ``__all__`` or not,
or a documented internal module such as ``sdk.consumer.engine``); the exceptions are listed,
each with its reason, in ``INTERNAL_INTERFACES``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("sdk", "spark_integration")

LAYERS: dict[str, int] = {
    "sdk.errors": 0,
    "sdk._client": 0,
    "sdk._message": 0,  # the message Protocol of the seam
    "sdk._admin": 0,  # the admin client's Protocol and its one factory
    "sdk._assignment": 0,  # reassign: librdkafka reads the committed offsets again
    "sdk._config": 0,  # the librdkafka config type: imports nothing of the SDK
    "sdk.failure": 0,  # the failure policy: imports errors, profiles and records only
    "sdk.recovery": 0,  # the recovery decision: a pure function of the error
    "sdk._connection": 0,  # BrokerContact: has a client reached a broker
    "sdk._deadline": 0,  # the Processor's per-record deadline: a flag a thread sets
    "sdk._deprecation": 0,
    "sdk._registry": 0,
    "sdk._signals": 0,
    "sdk.serialization": 0,
    "sdk.schemas": 0,  # registry (de)serializers: imports errors and confluent-kafka only
    "sdk.records": 0,
    "sdk.lifecycle": 0,
    "sdk.profiles": 0,
    "sdk.partitioners": 0,
    "sdk.assignors": 0,
    "sdk.observability": 0,
    "sdk.producer": 1,
    "sdk.consumer": 1,
    "sdk.doctor": 1,  # one admin client, translated; imports L0 only, so the clients may use it
    "sdk.core": 2,  # the transactional session
    "sdk.processor": 3,
    "sdk.queue": 3,
    "sdk.aio": 3,
    "sdk.sink": 3,
    "sdk": 4,
    "sdk.__main__": 4,
    "spark_integration": 4,  # Spark jobs over the Processor (L3) and the session (L2)
    "sdk.testing": 5,
}
"""The layer of each part; a part missing here fails the test (give a new module its layer)."""

KNOWN_UPWARD: dict[tuple[str, str], str] = {}
"""Upward imports that are known and not yet resolved, with why they exist: (part, the one
module of the part above it may import). Empty: keep it so."""

INTERNAL_INTERFACES: dict[tuple[str, str], str] = {
    ("sdk.testing", "sdk.testing.cluster._spawner"): (
        "the schema registry's JVM is forked like a broker's, from the one spawner thread, so "
        "it dies with the test process (PR_SET_PDEATHSIG follows the forking thread)"
    ),
    ("sdk.testing", "sdk.testing.cluster._config"): (
        "the schema registry takes a free port the way the brokers do"
    ),
    ("spark_integration", "sdk._connection"): (
        "the driver's admin client reports its broker contact as every client does: "
        "librdkafka's log collapsed, an unreachable address named at once"
    ),
    ("spark_integration", "sdk._client"): (
        "Spark's tasks and streaming sink hold SDK clients typed by the seam's Protocols and "
        "translate their calls at the one error seam, like every module that calls a client"
    ),
    ("spark_integration", "sdk._deprecation"): (
        "Spark's renamed spellings (seconds -> duration_s, moved names) warn through the SDK's "
        "one deprecation helper, so every deprecation reads and is tested alike"
    ),
}
"""Reach-ins into another package's private module that are part of the design: (importing
part, the private module up to its ``_`` segment) -> why it is an interface."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {
        _module_name(p): p for package in PACKAGES for p in sorted((ROOT / package).rglob("*.py"))
    }


def _ours(name: str) -> bool:
    return any(name == package or name.startswith(f"{package}.") for package in PACKAGES)


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth (functions, classes, ``if TYPE_CHECKING:``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _names(node: ast.Import | ast.ImportFrom, module: str, is_package: bool) -> Iterator[str]:
    """The dotted name of everything one import statement imports (modules and names)."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:  # relative: from the module's package
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, base] if base else package)
    for alias in node.names:
        yield f"{base}.{alias.name}"


def _target(name: str, modules: dict[str, Path]) -> str:
    """The module an imported dotted name loads (itself, or the module that holds the name)."""
    return name if name in modules or "." not in name else name.rpartition(".")[0]


def _part(module: str) -> str:
    if module == "spark_integration" or module.startswith("spark_integration."):
        return "spark_integration"
    return ".".join(module.split(".")[:2])


def _graph() -> dict[str, dict[str, set[str]]]:
    """``{part: {imported part: {"module -> module", ...}}}`` of both packages."""
    modules = _modules()
    graph: dict[str, dict[str, set[str]]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        src = _part(module)
        edges = graph.setdefault(src, {})
        for node in _imports(tree):
            for name in _names(node, module, path.name == "__init__.py"):
                target = _target(name, modules)
                if not _ours(target):
                    continue
                dst = _part(target)
                if dst != src:
                    edges.setdefault(dst, set()).add(f"{module} -> {target}")
    return graph


def _private_owner(name: str) -> tuple[str, str] | None:
    """``(package, private path)`` for the first ``_`` segment of ``name`` (dunders aside)."""
    segments = name.split(".")
    for i, segment in enumerate(segments):
        if segment.startswith("_") and not (segment.startswith("__") and segment.endswith("__")):
            return ".".join(segments[:i]), ".".join(segments[: i + 1])
    return None


def reach_ins(module: str, source: str, *, is_package: bool = False) -> list[tuple[str, str]]:
    """``(imported name, private path)`` of each import in ``source`` (the text of ``module``)
    that reaches into another package's private module or name."""
    found = []
    for node in _imports(ast.parse(source)):
        for name in _names(node, module, is_package):
            owner = _private_owner(name) if _ours(name) else None
            if owner is None:
                continue
            package, private = owner
            if module != package and not module.startswith(f"{package}."):
                found.append((name, private))
    return found


def _all_reach_ins() -> dict[tuple[str, str], set[str]]:
    """``{(importing part, private path): {"module -> name", ...}}`` of both packages."""
    found: dict[tuple[str, str], set[str]] = {}
    for module, path in _modules().items():
        source = path.read_text(encoding="utf-8")
        for name, private in reach_ins(module, source, is_package=path.name == "__init__.py"):
            found.setdefault((_part(module), private), set()).add(f"{module} -> {name}")
    return found


def _cycles(graph: dict[str, dict[str, set[str]]]) -> list[list[str]]:
    """The strongly connected parts of more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for succ in graph.get(node, {}):
            if succ not in index:
                visit(succ)
                low[node] = min(low[node], low[succ])
            elif succ in on_stack:
                low[node] = min(low[node], index[succ])
        if low[node] == index[node]:
            members = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                members.append(member)
                if member == node:
                    break
            if len(members) > 1:
                found.append(sorted(members))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_both_packages_are_covered() -> None:
    parts = set(_graph())
    assert {"sdk.producer", "sdk.testing", "spark_integration"} <= parts
    assert "sdk.producer" in _graph()["spark_integration"]  # spark's edges are read too


def test_every_part_has_a_layer() -> None:
    unknown = sorted(part for part in _graph() if part not in LAYERS)
    assert not unknown, f"give these parts a layer in LAYERS: {unknown}"


def test_no_cycle_between_parts() -> None:
    graph = _graph()
    cycles = _cycles(graph)
    detail = [
        f"{' <-> '.join(cycle)}: "
        + "; ".join(sorted(e for a in cycle for b in cycle if a != b for e in graph[a].get(b, ())))
        for cycle in cycles
    ]
    assert not cycles, "import cycles between parts of sdk:\n" + "\n".join(detail)


def test_no_import_upward() -> None:
    upward = []
    for src, edges in sorted(_graph().items()):
        for dst, where in sorted(edges.items()):
            if src not in LAYERS or dst not in LAYERS:
                continue
            targets = {edge.split(" -> ")[1] for edge in where}
            if all((src, target) in KNOWN_UPWARD for target in targets):
                continue
            # a part may import its layer or one below; sdk.testing is above every other part
            if LAYERS[dst] > LAYERS[src]:
                upward.append(
                    f"{src} (L{LAYERS[src]}) imports {dst} (L{LAYERS[dst]}): {sorted(where)}"
                )
    assert not upward, "imports upward:\n" + "\n".join(upward)


def test_the_known_upward_imports_still_exist() -> None:
    """An entry of KNOWN_UPWARD that was resolved must go, so it cannot hide a new one."""
    graph = _graph()
    gone = [
        (src, module)
        for src, module in KNOWN_UPWARD
        if not any(
            edge.endswith(f" -> {module}")
            for edges in graph.get(src, {}).values()
            for edge in edges
        )
    ]
    assert not gone, f"remove from KNOWN_UPWARD: {gone}"


def test_no_reach_into_another_packages_private_module() -> None:
    unlisted = [
        f"{part} -> {private}: {sorted(where)}"
        for (part, private), where in sorted(_all_reach_ins().items())
        if (part, private) not in INTERNAL_INTERFACES
    ]
    assert not unlisted, (
        "imports of another package's private module (import it from the package, or list it "
        "in INTERNAL_INTERFACES with its reason):\n" + "\n".join(unlisted)
    )


def test_the_internal_interfaces_are_still_used_and_have_a_reason() -> None:
    """An entry no import needs any more must go, so that it cannot hide a new reach-in."""
    used = set(_all_reach_ins())
    assert not [key for key in INTERNAL_INTERFACES if key not in used]
    assert all(reason.strip() for reason in INTERNAL_INTERFACES.values())


@pytest.mark.parametrize(
    ("module", "source", "expected"),
    [
        (
            "sdk.sink._batch",
            "from sdk.consumer._failure import FailurePath",
            [("sdk.consumer._failure.FailurePath", "sdk.consumer._failure")],
        ),
        (
            "sdk.sink._batch",
            "import sdk.consumer._health",
            [("sdk.consumer._health", "sdk.consumer._health")],
        ),
        (
            "spark_integration._config",
            "from sdk.profiles import _base",
            [("sdk.profiles._base", "sdk.profiles._base")],
        ),
        (
            "sdk.aio._sink",
            "from sdk.sink import _hidden",
            [("sdk.sink._hidden", "sdk.sink._hidden")],
        ),
        (
            "sdk.__main__",
            "from .doctor._cli import main",
            [("sdk.doctor._cli.main", "sdk.doctor._cli")],
        ),
        (
            "spark_integration._task",
            "from sdk._client import translating",
            [("sdk._client.translating", "sdk._client")],
        ),
        # inside the package that holds the private segment: its own business
        ("sdk.consumer._consumer", "from sdk.consumer._failure import FailurePath", []),
        ("sdk.consumer._consumer", "from ._failure import FailurePath", []),
        ("sdk.sink._batch", "from sdk._client import translating", []),
        ("spark_integration._task", "from spark_integration._slicing import slice_of", []),
        # through the package, or a module without a ``_``; dunders and other libraries
        ("sdk.sink._batch", "from sdk.consumer import engine", []),
        ("sdk.sink._batch", "from sdk.consumer.engine import FailurePath", []),
        ("sdk.__main__", "from sdk import __version__", []),
        ("sdk.sink._batch", "from confluent_kafka._model import X", []),
    ],
)
def test_a_reach_in_is_found(module: str, source: str, expected: list[tuple[str, str]]) -> None:
    assert reach_ins(module, source) == expected
