"""The plugin guides, followed literally in a fresh virtual environment: every file a guide shows is written
under its path, every command it shows is typed in order into one shell (``path/to/hookstream`` being a
copy of this checkout), each command's shown output must appear in what it printed, and then the plugin
must be listed by ``hookstream plugins`` from that environment. The conventions a guide follows for this
are in ``tests/guide_kit.py``. Quick checks of the files alone (layout, packaging, the one import style)
run first.

That test is slow (a minute or two, marked ``slow``): the guides make a venv, install the core from the
checkout (not editable: pip builds a wheel) with its dependencies from the package index (pip's cache is
used), and build and install each plugin. Both guides run in one folder, so the second reuses the venv the
first made, as its text allows. Skipped with the reason when no venv with pip can be made here; failed
instead when ``CI`` is set.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from guide_kit import Command, commands, files

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PLACEHOLDER = "path/to/hookstream"
# Left out of the checkout copy: environments, caches and build output that a wheel build would pick up.
SKIP = shutil.ignore_patterns(".git", ".venv*", ".tox", "build", "dist", "*.egg-info", "__pycache__",
                              "node_modules", "_build", ".mypy_cache", ".ruff_cache", ".hypothesis", "artifacts")
GUIDES = {
    "provider": ("writing-a-provider-plugin.md", "echo", "hookstream-echo", "providers", "echo"),
    "chunk-strategy": ("tutorial-chunk-strategy.md", "lines", "hookstream-lines", "chunk_strategies", "lines"),
}
# Plugin code: the SDK, plus the user faces for what users see too (messages, events, errors).
PLUGIN_CODE_FACES = {"hookstream", "hookstream.events", "hookstream.errors", "hookstream.server", "hookstream.stores",
                     "hookstream.plugin"}
PLUGIN_TEST_FACES = PLUGIN_CODE_FACES | {"hookstream.testing"}
# Every file of each guide's layout: a path line the extraction misses (a typo in the convention) fails here
# rather than as a puzzling ImportError in the venv.
FILES = {
    "provider": {"hookstream-echo/pyproject.toml", "hookstream-echo/src/hookstream_echo/__init__.py",
                 "hookstream-echo/src/hookstream_echo/plugin.py", "hookstream-echo/tests/test_echo.py",
                 "hookstream-echo/tests/test_conformance.py", "hookstream-echo/tests/test_contract.py",
                 "hookstream-echo/tests/recordings/echo__hello.sse",
                 "hookstream-echo/tests/recordings/expected/echo__hello.json"},
    "chunk-strategy": {"hookstream-lines/pyproject.toml", "hookstream-lines/src/hookstream_lines/__init__.py",
                       "hookstream-lines/src/hookstream_lines/plugin.py",
                       "hookstream-lines/tests/test_lines_strategy.py", "try_lines.py", "run.jsonl"},
}


def clean_env(shim: Path) -> dict[str, str]:
    # Nothing from this test's own environment may let the guide's venv see the editable checkout.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "HOOKSTREAM_", "VIRTUAL_ENV"))}
    # `python3` in the guides is the Python running this test (3.11+), whatever else is on PATH.
    env["PATH"] = os.pathsep.join([str(shim), env.get("PATH", "")])
    return env


def cannot(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: the plugin guides must be tested)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """``(work, checkout, shim)``: the empty folder the guides start in, a copy of this checkout, and a
    folder whose ``python3`` is this test's interpreter."""
    if shutil.which("bash") is None:
        cannot("the guides' commands need bash")
    base = tmp_path_factory.mktemp("guides")
    probe = subprocess.run([sys.executable, "-m", "venv", base / "probe"], capture_output=True, text=True)
    if probe.returncode != 0 or not (base / "probe" / "bin" / "pip").exists():
        cannot(f"cannot make a virtual environment with pip here: {probe.stderr.strip()[-500:]}")
    shutil.rmtree(base / "probe")
    checkout = base / "hookstream"
    # Installed from a copy: building in place would leave build/ and *.egg-info in the checkout.
    shutil.copytree(ROOT, checkout, ignore=SKIP)
    shim = base / "shim"
    shim.mkdir()
    (shim / "python3").symlink_to(sys.executable)
    work = base / "work"
    work.mkdir()
    return work, checkout, shim


def follow(guide: str, work: Path, checkout: Path, shim: Path) -> dict[str, str]:
    """Write the guide's files and type its commands; return each command's output."""
    text = (DOCS / guide).read_text("utf-8")
    for rel, content in files(text).items():
        target = work / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, "utf-8")
    steps = commands(text)
    logs = work.parent / f"logs-{guide}"
    logs.mkdir()
    script = ["cd " + shlex.quote(str(work))]
    for n, step in enumerate(steps):
        line = step.line.replace(PLACEHOLDER, shlex.quote(str(checkout)))
        script.append(f"{{ {line}\n}} >{shlex.quote(str(logs / str(n)))} 2>&1 || exit {100 + n}")
    proc = subprocess.run(["bash", "-c", "\n".join(script)], cwd=work, env=clean_env(shim), capture_output=True,
                          text=True, timeout=1800)
    outputs = {}
    for n, step in enumerate(steps):
        log = logs / str(n)
        if not log.exists():
            break
        outputs[step.line] = log.read_text("utf-8", "replace")
    if proc.returncode != 0:
        n = proc.returncode - 100
        failed = steps[n].line if 0 <= n < len(steps) else "?"
        pytest.fail(f"{guide}: `{failed}` exited non-zero\n{outputs.get(failed, proc.stderr)[-4000:]}", pytrace=False)
    for step in steps:
        shows_output(guide, step, outputs[step.line])
    return outputs


def shows_output(guide: str, step: Command, printed: str) -> None:
    lines = [line.rstrip() for line in printed.splitlines()]
    at = 0
    for want in step.output:
        try:
            at = lines.index(want, at) + 1
        except ValueError:
            pytest.fail(f"{guide}: `{step.line}` did not print {want!r} (in order); it printed:\n{printed[-3000:]}",
                        pytrace=False)


def imported_modules(source: str) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


@pytest.mark.parametrize("kind", list(GUIDES))
def test_guide_files_follow_the_conventions(kind: str) -> None:
    """Quick checks of what the slow test below runs: the layout, the packaging and the one import style."""
    guide, plugin, folder, _, _ = GUIDES[kind]
    shown = files((DOCS / guide).read_text("utf-8"))
    assert set(shown) == FILES[kind]
    meta = tomllib.loads(shown[f"{folder}/pyproject.toml"])
    project = meta["project"]
    assert project["name"] == folder and project["license"] == "MIT"
    assert any(re.match(r"hookstream\b(?!-)", dep) for dep in project["dependencies"]), project["dependencies"]
    assert set(project["entry-points"]["hookstream"]) == {plugin}
    assert meta["tool"]["setuptools"]["packages"]["find"]["where"] == ["src"]
    for path, source in shown.items():
        if not path.endswith(".py") or not path.startswith(f"{folder}/"):
            continue
        ours = {m for m in imported_modules(source) if m == "hookstream" or m.startswith("hookstream.")}
        # Plugin code uses the public faces but the testing kit; its tests may use that too.
        allowed = PLUGIN_CODE_FACES if "/src/" in path else PLUGIN_TEST_FACES
        assert ours <= allowed, f"{path} imports {sorted(ours - allowed)}"


@pytest.mark.slow
@pytest.mark.parametrize("kind", list(GUIDES))
def test_guide_followed_literally_gives_a_working_listed_plugin(kind: str, workspace: tuple[Path, Path, Path]) -> None:
    guide, plugin, folder, registry_kind, registered = GUIDES[kind]
    work, checkout, shim = workspace
    outputs = follow(guide, work, checkout, shim)

    # The guide's own tests ran with the venv's pytest, and none was skipped.
    test_runs = [out for line, out in outputs.items() if line.startswith("pytest ")]
    assert test_runs, f"{guide} never runs the plugin's tests"
    assert all(" passed" in out and "skipped" not in out for out in test_runs), test_runs
    promised = re.search(r"pytest reports `(\d+ passed)`", (DOCS / guide).read_text("utf-8"))
    assert promised and any(f" {promised.group(1)} in " in out for out in test_runs), test_runs

    venv = work / ".venv"
    env = clean_env(shim)
    where = subprocess.run([venv / "bin" / "python", "-c", "import hookstream; print(hookstream.__file__)"],
                           capture_output=True, text=True, env=env, cwd=work)
    assert where.stdout.startswith(str(venv)), where  # the installed wheel, not the checkout

    listing = subprocess.run([venv / "bin" / "hookstream", "plugins", "--json"], capture_output=True, text=True,
                             env=env, cwd=work)
    assert listing.returncode == 0, listing.stderr
    doc = json.loads(listing.stdout)
    assert doc["failures"] == []
    found = {p["name"]: p for p in doc["plugins"]}
    assert plugin in found, sorted(found)
    assert found[plugin]["distribution"] == folder
    assert registered in found[plugin]["registered"][registry_kind]
