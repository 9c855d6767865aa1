"""The project's import graph: no cycle, layers import downwards only, the pure core stays pure.

The graph is built from the source (``ast``), not from ``sys.modules``, so every import counts: top-level,
function-level (lazy) and ``if TYPE_CHECKING:`` ones alike. A lazy import is how a cycle hides, and a
type-only cycle still ties two modules together for a reader, so none is exempt.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = ("engine", "streams", "ops")
INFRASTRUCTURE = {"faust", "mode", "aiokafka", "asyncpg", "kafka"}

# Rank of each layer: a module may import its own layer and lower ranks only (docs/architecture.md).
LAYERS = {
    "engine": 0,
    "streams": 0,  # the package docstring only
    "streams.wire": 1,
    "streams.store": 2,
    "streams.runtime": 3,
    "streams.services": 4,
    "streams.worker": 5,
    "streams.client": 5,
    "streams.embedded": 5,
    "streams.adapters": 6,  # framework adapters on top of the client SDK (client side)
    "streams.view": 6,
    "streams.cli": 7,
    "ops": 8,
}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def project_modules() -> dict[str, Path]:
    return {module_name(p): p for root in ROOTS for p in sorted((REPO / root).rglob("*.py"))}


def _package(name: str, path: Path) -> str:
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def imported_names(name: str, path: Path) -> Iterator[str]:
    """Every module name ``path`` imports, anywhere in the file; ``from X import Y`` yields ``X.Y`` and ``X``."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = _package(name, path).split(".")
                anchor = anchor[: len(anchor) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph() -> dict[str, set[str]]:
    modules = project_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        edges = {target for target in imported_names(name, path) if target in modules and target != name}
        # importing a.b.c runs a/__init__ and a/b/__init__ first (a module's own packages contain it: no edge)
        parents = {parent for t in edges for parent in _parents(t) if parent in modules}
        graph[name] = (edges | parents) - {name, *_parents(name)}
    return graph


def _parents(name: str) -> Iterator[str]:
    parts = name.split(".")
    yield from (".".join(parts[:i]) for i in range(1, len(parts)))


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's components with more than one module (iterative: the graph has hundreds of nodes)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is None:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
            elif child not in index:
                index[child] = low[child] = len(index)
                stack.append(child)
                on_stack.add(child)
                work.append((child, iter(sorted(graph[child]))))
            elif child in on_stack:
                low[node] = min(low[node], index[child])
    return found


def layer(name: str) -> tuple[str, int] | None:
    matches = [(prefix, rank) for prefix, rank in LAYERS.items() if name == prefix or name.startswith(prefix + ".")]
    return max(matches, key=lambda match: len(match[0])) if matches else None


def test_the_graph_sees_lazy_and_type_only_imports() -> None:
    graph = import_graph()
    assert "streams.worker.app" in graph["streams.worker.runner"]  # a top-level import
    assert "streams.client.replay" in graph["streams.cli.ops"]  # imported inside a function only
    assert graph["streams.cli.ops"] >= {"streams.client", "streams.store"}  # a package's __init__ runs first
    assert "streams.store" not in graph["streams.store.postgres"]  # but a module's own package contains it


def test_a_cycle_is_found() -> None:
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_in_the_project() -> None:
    assert strongly_connected(import_graph()) == []


def test_every_module_imports_its_own_layer_or_lower_ones() -> None:
    graph = import_graph()
    upward = []
    for name, targets in graph.items():
        here = layer(name)
        assert here is not None, f"{name} is in no layer of docs/architecture.md"
        for target in targets:
            there = layer(target)
            assert there is not None
            if there[1] > here[1] or (there[1] == here[1] and there[0] != here[0]):
                upward.append(f"{name} -> {target}")
    assert upward == []


def test_the_engine_imports_no_infrastructure() -> None:
    modules = project_modules()
    offending = [
        f"{name} imports {target}"
        for name, path in modules.items()
        if name == "engine" or name.startswith("engine.")
        for target in imported_names(name, path)
        if target.split(".")[0] in INFRASTRUCTURE or target.startswith(("streams", "ops"))
    ]
    assert offending == []


def test_asyncpg_only_in_the_store() -> None:
    modules = project_modules()
    offending = [
        name
        for name, path in modules.items()
        if not name.startswith("streams.store")
        and any(t.split(".")[0] == "asyncpg" for t in imported_names(name, path))
    ]
    assert offending == []
