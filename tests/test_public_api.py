"""The public faces hold: ``hookstream`` and its public modules ``hookstream.events``, ``.errors``,
``.server`` and ``.stores`` (users), ``hookstream.plugin`` (plugin authors) and ``hookstream.testing``
(test helpers) export what they list, the docs import nothing else, and every hookstream class the docs
name exists on a face.

Implementation modules are private (``hookstream._chat``...), as in httpx; these tests keep the docs
from drifting back to them and keep each face complete for what the docs teach.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import re
import types
from pathlib import Path

import hookstream
import hookstream.errors
import hookstream.events
import hookstream.plugin
import hookstream.server
import hookstream.stores
import hookstream.testing
import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PACKAGE = ROOT / "core" / "hookstream"

FACES: dict[str, types.ModuleType] = {
    "hookstream": hookstream,
    "hookstream.events": hookstream.events,
    "hookstream.errors": hookstream.errors,
    "hookstream.server": hookstream.server,
    "hookstream.stores": hookstream.stores,
    "hookstream.plugin": hookstream.plugin,
    "hookstream.testing": hookstream.testing,
}
# The public modules beside ``hookstream`` that group the user face (thin lazy re-exports).
USER_MODULES = ("hookstream.events", "hookstream.errors", "hookstream.server", "hookstream.stores")
USER_FACES = frozenset({"hookstream", *USER_MODULES, "hookstream.testing"})
PLUGIN_FACES = USER_FACES | {"hookstream.plugin"}
# How many names ``hookstream`` may export: what a user of chat() needs, the rest lives in USER_MODULES.
MAX_TOP_LEVEL_NAMES = 120

PLUGIN_DOCS = frozenset({"writing-a-provider-plugin.md", "tutorial-chunk-strategy.md", "tutorial-run-plugin.md",
                         "hooks.rst",
                         "installing-plugins.md", "executors.md"})
# Pages about the implementation for hookstream's own engineers: they name private classes on purpose.
# Pages that name private classes or other libraries' classes on purpose (internals, peer benchmarks).
INTERNALS_DOCS = frozenset({"architecture.md", "performance.md"})

# CamelCase names the docs put in inline code that are not hookstream's: AG-UI protocol types, a
# provider's own schema type, the HTTP auth scheme, a class of the separate hookstream-strategies
# distribution.
# Names from AG-UI, the standard library and typing that docs mention in inline code.
NOT_HOOKSTREAM = frozenset({"RunAgentInput", "HttpAgent", "Schema", "Bearer", "DebounceStrategy", "Enum", "Literal",
                            "Path", "TypedDict", "Annotated", "Callable", "Authorization", "Origin", "Host",
                            # third-party classes the cloud provider pages name (azure-identity, openai, google-auth,
                            # anthropic, botocore)
                            "TokenCredential", "DefaultAzureCredential", "AzureOpenAI", "OpenAI", "AnthropicVertex",
                            "Credentials", "EventStreamBuffer", "SigV4Auth"})
# The bundled plugin distributions' own public names (their pages document them).
PLUGIN_PACKAGES = ("hookstream_openai", "hookstream_anthropic", "hookstream_gemini", "hookstream_strategies",
                   "hookstream_otel", "hookstream_mcp", "hookstream_azure", "hookstream_vertex", "hookstream_bedrock",
                   "hookstream_ollama", "hookstream_ray", "hookstream_cache", "hookstream_guardrails",
                   "hookstream_compaction", "hookstream_toolsearch", "hookstream_dbos",
                   "hookstream_provider_batch", "hookstream_timing", "hookstream_process", "hookstream_replay",
                   "hookstream_batch")


def plugin_names() -> set[str]:
    names: set[str] = set()
    for package in PLUGIN_PACKAGES:
        try:
            module = importlib.import_module(package)
        except ImportError:
            continue
        names.update(getattr(module, "__all__", ()))
    return names

_FENCE = re.compile(r"```python\n(?P<code>.*?)\n```", re.S)
_INLINE_CODE = re.compile(r"`(?P<code>[^`\n]+)`")
# A CamelCase name that is a whole code span, or is called / dotted into inside one.
_CLASS_NAME = re.compile(r"(?<![\w.\"'-])(?P<name>[A-Z][A-Za-z0-9]*[a-z][A-Za-z0-9]*)(?=$|[(.\[])")
_AUTODOC = re.compile(r"^\.\. auto(?:class|function|data|exception):: (?P<target>[\w.]+)", re.M)


def doc_files() -> list[Path]:
    files = [*sorted(DOCS.glob("*.md")), *sorted((DOCS / "providers").glob("*.md")),
             *sorted((DOCS / "examples").glob("*.py")), DOCS / "hooks.rst", ROOT / "README.md"]
    return [f for f in files if f.is_file()]


def allowed_faces(doc: Path) -> frozenset[str]:
    return PLUGIN_FACES if doc.name in PLUGIN_DOCS else USER_FACES


def code_blocks(doc: Path) -> list[tuple[int, str]]:
    """(first line, source) of each Python sample; an example script is one block."""
    text = doc.read_text("utf-8")
    if doc.suffix == ".py":
        return [(1, text)]
    return [(text.count("\n", 0, m.start("code")) + 1, m.group("code")) for m in _FENCE.finditer(text)]


def hookstream_imports(source: str) -> list[tuple[str, str | None]]:
    """(module, name) for each ``from hookstream... import name``, (module, None) for
    ``import hookstream...``, and ("hookstream", attr) for each ``hookstream.attr`` after
    ``import hookstream``."""
    tree = ast.parse(source)
    found: list[tuple[str, str | None]] = []
    plain_import = False
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "hookstream" or node.module.startswith("hookstream."):
                found.extend((node.module, alias.name) for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "hookstream" or alias.name.startswith("hookstream."):
                    found.append((alias.name, None))
                    plain_import |= alias.name == "hookstream" and alias.asname is None
    if plain_import:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "hookstream":
                found.append(("hookstream", node.attr))
    return found


def doc_imports() -> list[tuple[Path, int, str, str | None]]:
    out = []
    for doc in doc_files():
        for line, code in code_blocks(doc):
            try:
                imports = hookstream_imports(code)
            except SyntaxError as exc:
                pytest.fail(f"{doc.relative_to(ROOT)}:{line}: a python sample that does not parse: {exc}")
            out.extend((doc, line, module, name) for module, name in imports)
    return out


# -- (a) every exported name resolves ------------------------------------------------------------

@pytest.mark.parametrize("face", sorted(FACES))
def test_every_exported_name_resolves(face: str) -> None:
    module = FACES[face]
    assert len(module.__all__) == len(set(module.__all__)), f"{face}.__all__ lists a name twice"
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing, f"{face}.__all__ names what it does not have: {missing}"


def test_lazy_table_matches_all() -> None:
    lazy = set(hookstream._LAZY)  # the PEP 562 table behind `import hookstream`
    exported = set(hookstream.__all__) - {"__version__"}
    assert lazy == exported, f"only in _LAZY: {sorted(lazy - exported)}; only in __all__: {sorted(exported - lazy)}"
    assert set(dir(hookstream)) >= exported


@pytest.mark.parametrize("face", USER_MODULES)
def test_public_modules_are_lazy_re_exports(face: str) -> None:
    module = FACES[face]
    assert (module.__doc__ or "").strip(), f"{face} has no docstring"
    values = {name: getattr(module, name) for name in module.__all__}
    defined_here = [name for name, value in values.items()
                    if isinstance(value, (type, types.FunctionType)) and value.__module__ == face]
    assert not defined_here, f"{face} defines {defined_here}: a public module only re-exports"
    # Reachable as an attribute after a bare `import hookstream`, as a package's modules are.
    assert getattr(hookstream, face.rpartition(".")[2]) is module


# Names hookstream.plugin shares with the user faces, each on purpose:
# - Provider: users annotate and pass what get_model() returns (FallbackModel takes a list of them);
#   plugin authors subclass it.
PLUGIN_SHARES = frozenset({"Provider"})


def test_plugin_face_does_not_repeat_the_user_face() -> None:
    # Plugins import messages, events, errors... from the user faces; the SDK holds what only they need.
    user = set().union(*(set(FACES[face].__all__) for face in ("hookstream", *USER_MODULES)))
    shared = set(hookstream.plugin.__all__) & user
    assert shared == PLUGIN_SHARES, f"hookstream.plugin re-exports user-face names: {sorted(shared - PLUGIN_SHARES)}"


def test_top_level_stays_small() -> None:
    assert len(hookstream.__all__) <= MAX_TOP_LEVEL_NAMES, (
        f"hookstream exports {len(hookstream.__all__)} names (at most {MAX_TOP_LEVEL_NAMES}): group the rest "
        f"into a public module ({', '.join(USER_MODULES)})")


def test_no_public_name_is_taken_from_a_private_face() -> None:
    # hookstream's values come from its own implementation modules, never from the testing kit.
    for name in hookstream.__all__:
        value = getattr(hookstream, name)
        owner = getattr(value, "__module__", None)
        assert not (owner or "").startswith("hookstream.testing"), f"hookstream.{name} comes from {owner}"


# -- (b) the docs import only from the faces, only names the faces export ------------------------

def test_docs_have_imports_to_check() -> None:
    assert len(doc_imports()) >= 30


@pytest.mark.parametrize("doc", doc_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_doc_imports_only_public_names(doc: Path) -> None:
    allowed = allowed_faces(doc)
    problems = []
    for where, line, module, name in doc_imports():
        if where != doc:
            continue
        if module not in allowed:
            problems.append(f"line {line}: imports from {module} (allowed: {sorted(allowed)})")
        elif name is not None and name not in FACES[module].__all__:
            problems.append(f"line {line}: {module}.{name} is not in {module}.__all__")
    assert not problems, f"{doc.relative_to(ROOT)}:\n" + "\n".join(problems)


def test_hook_reference_documents_public_names() -> None:
    # hooks.rst renders the hook specs from their (private) module; every other target is on a face.
    text = (DOCS / "hooks.rst").read_text("utf-8")
    assert ".. automodule:: hookstream._hookspecs" in text
    targets = [m.group("target") for m in _AUTODOC.finditer(text)]
    assert "hookstream.plugin.StreamBuilder" in targets and "hookstream.plugin.Provider" in targets
    for target in targets:
        module, _, name = target.rpartition(".")
        assert module in PLUGIN_FACES and name in FACES[module].__all__, f"hooks.rst documents {target}"


# -- (c) no public name is a module shadowed by a function ----------------------------------------

def test_no_public_name_shadows_a_module() -> None:
    clashes = []
    for name in hookstream.__all__:
        if (PACKAGE / f"{name}.py").exists() or (PACKAGE / name).is_dir():
            clashes.append(name)
        elif importlib.util.find_spec(f"hookstream.{name}") is not None:
            clashes.append(name)
        elif isinstance(getattr(hookstream, name), types.ModuleType):
            clashes.append(name)
    assert not clashes, f"hookstream names that are also modules: {clashes}"


def test_only_the_faces_are_public_modules() -> None:
    public = sorted(p.stem for p in PACKAGE.iterdir()
                    if not p.name.startswith("_") and (p.suffix == ".py" or (p / "__init__.py").exists()))
    expected = sorted(face.rpartition(".")[2] for face in FACES if face != "hookstream")
    assert public == expected, f"public modules beside the faces: {public}"


def test_chat_is_the_function() -> None:
    assert callable(hookstream.chat) and not isinstance(hookstream.chat, types.ModuleType)
    assert importlib.import_module("hookstream").chat is hookstream.chat


# -- (d) the faces are complete for what the docs teach -------------------------------------------

def doc_class_names() -> dict[str, set[str]]:
    """CamelCase names in the docs' inline code (``Timeouts``, ``StepSettings(...)``) -> pages."""
    names: dict[str, set[str]] = {}
    for doc in doc_files():
        if doc.suffix == ".py" or doc.name in INTERNALS_DOCS:
            continue
        prose = _FENCE.sub("", doc.read_text("utf-8"))
        for span in _INLINE_CODE.finditer(prose):
            for m in _CLASS_NAME.finditer(span.group("code")):
                names.setdefault(m.group("name"), set()).add(doc.name)
    return names


def test_classes_the_docs_name_are_on_a_face() -> None:
    exported = set().union(*(set(m.__all__) for m in FACES.values())) | plugin_names()
    names = doc_class_names()
    assert {"Timeouts", "Callbacks", "LoopSettings", "StreamBuilder"} <= set(names)
    missing = {name: sorted(pages) for name, pages in names.items()
               if name not in exported and name not in NOT_HOOKSTREAM and not hasattr(builtins, name)}
    assert not missing, f"the docs name classes no face exports: {missing}"


def test_names_the_doc_samples_import_exist() -> None:
    for doc, line, module, name in doc_imports():
        if module in FACES and name is not None:
            assert hasattr(FACES[module], name), f"{doc.name}:{line}: {module}.{name} does not resolve"


# -- (e) one exception root: every error a user or plugin can see is a HookstreamError with a code --

# Exceptions that never leave their module: each is caught and turned into a typed public error or an
# answer there (ArgumentTypeError -> the tool's error result, Unsupported -> ToolDefinitionError, the AG-UI
# server's _Refused -> an HTTP error response).
INTERNAL_EXCEPTIONS = frozenset({"ArgumentTypeError", "Unsupported", "_Refused"})
# Its code is the RUN_ERROR event's it stands for, set per instance.
CODE_PER_INSTANCE = frozenset({"RunFailedError"})
_SOURCE_ROOTS = (PACKAGE, *sorted((ROOT / "plugins").glob("*/src")))


def exported_exceptions() -> dict[str, type[BaseException]]:
    """``face.Name`` -> class, for each exception class a face or a bundled plugin package exports."""
    modules = dict(FACES)
    for package in PLUGIN_PACKAGES:
        try:
            modules[package] = importlib.import_module(package)
        except ImportError:
            continue
    found: dict[str, type[BaseException]] = {}
    for face, module in modules.items():
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, BaseException):
                found[f"{face}.{name}"] = value
    return found


def test_every_exported_exception_is_a_hookstream_error_with_a_code() -> None:
    errors = exported_exceptions()
    assert len(errors) >= 30
    outside = sorted(where for where, cls in errors.items() if not issubclass(cls, hookstream.HookstreamError))
    assert not outside, f"exceptions outside HookstreamError: {outside}"
    codes: dict[str, str] = {}
    for where, cls in sorted(errors.items()):
        if cls is hookstream.HookstreamError or cls.__name__ in CODE_PER_INSTANCE:
            continue
        code = vars(cls).get("code")
        assert isinstance(code, str) and re.fullmatch(r"[a-z][a-z0-9_]*", code), f"{where} has no code of its own"
        other = codes.setdefault(code, cls.__qualname__)
        assert other == cls.__qualname__, f"{where} and {other} share the code {code!r}"


def test_no_exception_class_is_defined_outside_the_root() -> None:
    # Source scan, so an exception a face forgot to export is caught too: a class whose bases are only
    # built-in exceptions must be the root itself or an internal signal.
    builtin_exceptions = {name for name, value in vars(builtins).items()
                          if isinstance(value, type) and issubclass(value, BaseException)}
    offenders = []
    for root in _SOURCE_ROOTS:
        for path in sorted(root.rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text("utf-8"))):
                if not isinstance(node, ast.ClassDef) or node.name in INTERNAL_EXCEPTIONS | {"HookstreamError"}:
                    continue
                bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
                if bases and len(bases) == len(node.bases) and set(bases) <= builtin_exceptions:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}({', '.join(bases)})")
    assert not offenders, "exceptions that do not derive from HookstreamError:\n" + "\n".join(offenders)


# -- (f) tests go through the public faces ------------------------------------------------------------

# The share of test files that may import a private module (``hookstream._x``): the tests of internals
# (the transport's chunked reads, the engine's thread pool, the CLI's renderers, the hook specs...).
MAX_PRIVATE_TEST_SHARE = 0.15


def suite_files() -> list[Path]:
    return sorted([*ROOT.glob("tests/**/test_*.py"), *ROOT.glob("plugins/*/tests/test_*.py")])


def private_imports(path: Path) -> set[str]:
    """The private hookstream modules ``path`` imports (``from hookstream._x import``, ``import
    hookstream._x``, ``from hookstream import _x``), anywhere in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts[0] == "hookstream" and any(p.startswith("_") for p in parts[1:]):
                found.add(node.module)
            elif node.module == "hookstream":
                found.update(f"hookstream.{a.name}" for a in node.names if a.name.startswith("_"))
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names
                         if a.name.startswith("hookstream.") and any(p.startswith("_") for p in a.name.split(".")[1:]))
    return found


def test_tests_use_the_public_faces() -> None:
    files = suite_files()
    assert len(files) >= 100
    private = {str(f.relative_to(ROOT)): sorted(mods) for f in files if (mods := private_imports(f))}
    share = len(private) / len(files)
    assert share <= MAX_PRIVATE_TEST_SHARE, (
        f"{len(private)} of {len(files)} test files ({share:.0%}) import private modules (at most "
        f"{MAX_PRIVATE_TEST_SHARE:.0%}); import from the public faces instead:\n"
        + "\n".join(f"{name}: {mods}" for name, mods in sorted(private.items())))


def test_a_name_two_faces_export_is_one_object() -> None:
    # hookstream.ModelInfo (a catalogue entry) and hookstream.testing.ModelInfo (what a FunctionModel is told)
    # were two classes under one name (issue 39): a name means one thing across the faces.
    seen: dict[str, tuple[str, object]] = {}
    clashes = []
    for face_name, face in FACES.items():
        for name in face.__all__:
            value = getattr(face, name)
            if name in seen and seen[name][1] is not value:
                clashes.append(f"{seen[name][0]}.{name} is not {face_name}.{name}")
            seen.setdefault(name, (face_name, value))
    assert not clashes
