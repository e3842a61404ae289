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
