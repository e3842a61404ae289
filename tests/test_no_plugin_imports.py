"""The core imports no plugin distribution, by name either. import-linter's contract "the core imports no
plugin distribution" (pyproject.toml) sees ``import`` statements; this scan of ``core/hookstream`` sees
what it cannot: ``import_module("hookstream_mcp")``, ``__import__(...)`` and ``"module:attribute"``
references that name a plugin's package. Messages may still name a distribution to install
(``pip install hookstream-mcp``): that is not an import.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "core" / "hookstream"


def plugin_packages() -> set[str]:
    """The import names of the bundled plugin distributions (``plugins/*/src/PACKAGE``)."""
    return {p.name for p in ROOT.glob("plugins/*/src/*") if (p / "__init__.py").exists()}


def imports_by_name(source: str, packages: set[str]) -> list[tuple[int, str]]:
    """``(line, text)`` of each string constant in ``source`` that is a plugin's module or
    ``"module:attribute"`` reference (``"hookstream_ray"``, ``"hookstream_mcp._server:MCPServer"``), and
    each ``import_module``/``__import__`` call whose name is built at run time from a plugin's name."""
    ref = re.compile(rf"^(?:{'|'.join(map(re.escape, sorted(packages)))})(?:[.:][\w.:]*)?$")
    found: dict[int, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and ref.match(node.value.strip()):
            found.setdefault(node.lineno, node.value)
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("import_module", "__import__") and node.args:
                text = ast.unparse(node.args[0])
                if any(p in text for p in packages):
                    found[node.lineno] = text
    return sorted(found.items())


def test_the_scan_catches_an_import_by_name() -> None:
    packages = {"hookstream_mcp", "hookstream_ray"}
    source = ("import importlib\n"
              "plugin = importlib.import_module('hookstream_mcp')\n"
              "batch = __import__(f'hookstream_ray.{name}')\n"
              "REF = 'hookstream_mcp._server:MCPServer'\n"
              "HINT = '--mcp needs the hookstream-mcp plugin: pip install hookstream-mcp'\n"
              "DOC = 'hookstream_ray.RayRunner() runs the chats on Ray'\n")
    assert [line for line, _ in imports_by_name(source, packages)] == [2, 3, 4]


def test_no_core_module_imports_a_plugin_by_name() -> None:
    packages = plugin_packages()
    assert {"hookstream_mcp", "hookstream_ray", "hookstream_openai"} <= packages
    found = [f"{path.relative_to(ROOT)}:{line}: {text}"
             for path in sorted(CORE.rglob("*.py"))
             for line, text in imports_by_name(path.read_text(encoding="utf-8"), packages)]
    assert not found, "the core names a plugin package to import:\n" + "\n".join(found)


CORE_LINE_LIMIT = 25_000
"""Issue 39: the core holds the library; applications (the server, run plugins, drivers) are plugins."""

_PRIVATE = re.compile(r"^hookstream\._\w+")


def private_core_imports(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of each import of a private core module (``hookstream._x``, ``from hookstream
    import _x``), type-only ones included, and each string naming one (``"hookstream._cli.x:Worker"``: a
    gunicorn worker class, an entry point, an ``import_module`` argument)."""
    found: dict[int, str] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update((node.lineno, a.name) for a in node.names if _PRIVATE.match(a.name))
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if _PRIVATE.match(node.module):
                found[node.lineno] = node.module
            elif node.module == "hookstream" and any(a.name.startswith("_") for a in node.names):
                found[node.lineno] = f"from hookstream import {', '.join(a.name for a in node.names)}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _PRIVATE.match(node.value) \
                and " " not in node.value:
            found.setdefault(node.lineno, node.value)
    return sorted(found.items())


def test_the_private_import_scan_catches_each_form() -> None:
    source = ("import hookstream._events\n"
              "from hookstream._stream.provider import Provider\n"
              "from hookstream import _demo\n"
              "from hookstream import chat\n"
              "from hookstream.plugin import hookimpl\n"
              "WORKER = 'hookstream._cli.gthread_worker.HookstreamWorker'\n"
              "DOC = 'hookstream._server is gone'\n")
    assert [line for line, _ in private_core_imports(source)] == [1, 2, 3, 6]


def test_no_plugin_imports_a_private_core_module() -> None:
    found = [f"{path.relative_to(ROOT)}:{line}: {text}"
             for path in sorted(ROOT.glob("plugins/*/src/**/*.py"))
             for line, text in private_core_imports(path.read_text(encoding="utf-8"))]
    assert not found, "a plugin imports a private core module (use hookstream.plugin & co.):\n" + "\n".join(found)


def test_the_core_stays_under_its_line_limit() -> None:
    lines = sum(len(p.read_bytes().splitlines()) for p in (ROOT / "core").rglob("*.py"))
    assert lines <= CORE_LINE_LIMIT, (f"core/ holds {lines} lines of Python, over {CORE_LINE_LIMIT}: an application "
                                      "on the library belongs in a plugin (docs/architecture.md)")
