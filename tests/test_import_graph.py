"""No import circle inside the core (issue 39) nor inside any plugin package under ``plugins/``: every import
of a module of the same package counts, the ones under ``if TYPE_CHECKING:`` and the ones inside functions
included, since a circle of type-only imports is still two modules that must be read, changed and reviewed
together. The graph is built from the source with :mod:`ast` (what import-linter's layers contract skips: it
leaves type-only imports out)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORE = ROOT / "core" / "hookstream"
PLUGIN_PACKAGES = sorted(p.parent for p in ROOT.glob("plugins/*/src/*/__init__.py"))


def module_names(package: Path = CORE) -> dict[str, Path]:
    """Every module of the package in directory ``package``, by dotted name."""
    out: dict[str, Path] = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The core modules ``name`` imports anywhere in its source (``from .. import x`` names module ``x``)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[: len(package) - node.level + 1] if node.level else [])
            stem = ".".join(p for p in (base, node.module or "") if p) if node.level else node.module or ""
            targets = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in modules else stem for a in node.names]
        elif isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def circles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_the_checker_finds_a_circle() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def package_circles(package: Path) -> tuple[dict[str, set[str]], list[dict[str, list[str]]]]:
    """The import graph of the package in ``package`` and its circles, each as module -> what it imports
    of its circle."""
    modules = module_names(package)
    edges = {name: imported(name, path, modules) for name, path in modules.items()}
    return edges, [{m: sorted(edges[m] & set(c)) for m in c} for c in circles(edges)]


def test_the_core_has_no_import_circle() -> None:
    edges, found = package_circles(CORE)
    assert "hookstream._hookspecs" in edges["hookstream._pm"]  # the graph is really built
    assert not found, f"import circles in core/hookstream (each module -> what it imports of its circle): {found}"


def test_no_plugin_has_an_import_circle() -> None:
    assert len(PLUGIN_PACKAGES) >= 20  # every plugin under plugins/ is really looked at
    edges, _ = package_circles(ROOT / "plugins" / "hookstream-server" / "src" / "hookstream_server")
    assert "hookstream_server.limits" in edges["hookstream_server.serve"]  # the graph is really built
    found = {p.name: c for p in PLUGIN_PACKAGES if (c := package_circles(p)[1])}
    assert not found, f"import circles in plugins (each module -> what it imports of its circle): {found}"
