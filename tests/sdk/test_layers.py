"""The layers of the ``sdk`` package: no cycle between its parts, no import upward.

The import graph is built from the source with ``ast`` (nothing is imported): every ``import``
and ``from ... import`` of every module, at module level and inside functions and classes, and
those inside an ``if TYPE_CHECKING:`` block too: an import made for annotations only is still a
dependency of the design (the Producer once reached the transactional session, the layer above
it, and the session imported the Producer only for its annotations; counted, that circle shows
up here). A part is a package (``sdk.producer``, ``sdk.core``) or a top-level module
(``sdk.errors``).

The layer table (docs/architecture.md, "The layers"):

L0  errors, _client (the seam and its Protocols), records, lifecycle, profiles,
    partitioners, assignors, observability, serialization, and the small top-level helpers
L1  producer, consumer: one client each, translated
L2  core (session, recovery, failure): the guarantee machinery
L3  processor, queue, aio: the front ends
    ``sdk`` itself (the public facade) and ``sdk.__main__`` (the command line) sit on top;
    ``sdk.testing`` is opt-in and never imported by L0-L3 (nor by the facade).

A part may import its own layer or one below; parts of one layer must not import each other in
a circle.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SDK = Path(__file__).resolve().parents[2] / "sdk"

LAYERS: dict[str, int] = {
    "sdk.errors": 0,
    "sdk._client": 0,
    "sdk._connection": 0,
    "sdk._deprecation": 0,
    "sdk._registry": 0,
    "sdk._signals": 0,
    "sdk.serialization": 0,
    "sdk.records": 0,
    "sdk.lifecycle": 0,
    "sdk.profiles": 0,
    "sdk.partitioners": 0,
    "sdk.assignors": 0,
    "sdk.observability": 0,
    "sdk.producer": 1,
    "sdk.consumer": 1,
    "sdk.doctor": 1,  # one admin client, translated; imports L0 only, so the clients may use it
    "sdk.core": 2,
    "sdk.processor": 3,
    "sdk.queue": 3,
    "sdk.aio": 3,
    "sdk.sink": 3,
    "sdk": 4,
    "sdk.__main__": 4,
    "sdk.testing": 5,
}
"""The layer of each part; a part missing here fails the test (give a new module its layer)."""

KNOWN_UPWARD: dict[tuple[str, str], str] = {
    ("sdk.consumer", "sdk.core.failure"): (
        "the Consumer runs the user's handler with the failure policy (retries, then dead "
        "letter or stop), which the table puts in L2"
    ),
}
"""Upward imports that are known and not yet resolved, with why they exist: (part, the one
module of the part above it may import)."""


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SDK.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(SDK.rglob("*.py"))}


def _imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth (functions, classes, ``if TYPE_CHECKING:``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _targets(
    node: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: dict[str, Path]
) -> Iterator[str]:
    """The ``sdk`` modules one import statement loads."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
        return
    base = node.module or ""
    if node.level:  # relative: from the module's package
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - node.level + 1]
        base = ".".join([*package, base] if base else package)
    for alias in node.names:
        submodule = f"{base}.{alias.name}"
        yield submodule if submodule in modules else base


def _part(module: str) -> str:
    return ".".join(module.split(".")[:2])


def _graph() -> dict[str, dict[str, set[str]]]:
    """``{part: {imported part: {"module -> module", ...}}}`` of the whole package."""
    modules = _modules()
    graph: dict[str, dict[str, set[str]]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        src = _part(module)
        edges = graph.setdefault(src, {})
        for node in _imports(tree):
            for target in _targets(node, module, path.name == "__init__.py", modules):
                if target != "sdk" and not target.startswith("sdk."):
                    continue
                dst = _part(target)
                if dst != src:
                    edges.setdefault(dst, set()).add(f"{module} -> {target}")
    return graph


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
