"""Every distribution builds as an sdist and a wheel, and the wheels work installed for real (not editable)
in a fresh virtual environment: ``hookstream demo`` answers and ``hookstream plugins --json`` lists every
plugin. In an environment holding only the core, ``hookstream install FOLDER`` adds a plugin and
``hookstream uninstall`` removes it; without pip, ``hookstream install`` says how to get it.

Slow (about a minute): ``python -m build`` builds every distribution in one build environment of their declared
build requirements, and the fresh environments install the core's dependencies from the package index (pip's
cache is used)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = sorted(p.name for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").exists())
# Left out of the copies: environments, caches and earlier build output that would leak into an sdist.
SKIP = shutil.ignore_patterns(".git", ".venv*", ".tox", "build", "dist", "*.egg-info", "__pycache__",
                              "node_modules", "_build", ".mypy_cache", ".ruff_cache", ".hypothesis", "artifacts")


def clean_env() -> dict[str, str]:
    # Nothing from the test's own environment may make the fresh venv see the editable checkout.
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "HOOKSTREAM_", "VIRTUAL_ENV"))}


def run(args: list[str | Path], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, env=clean_env(),
                          timeout=timeout)


def ok(args: list[str | Path], cwd: Path) -> str:
    proc = run(args, cwd)
    assert proc.returncode == 0, f"{args} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """``(src, out)``: a copy of the sources (plugins under ``src/plugins``) and the built sdists and wheels."""
    pytest.importorskip("build", reason="needs the build package (requirements/test.txt)")
    base = tmp_path_factory.mktemp("dists")
    src, out = base / "src", base / "out"
    # Built from copies: building in place leaves build/ and *.egg-info in the checkout.
    shutil.copytree(ROOT, src, ignore=SKIP)
    folders = [src, *(src / "plugins" / p for p in PLUGINS)]
    python = build_env(base / "build-env", folders)
    # Default build: the sdist first, then the wheel from the unpacked sdist, so a file the sdist misses
    # breaks the wheel. Two at a time use both cores of the CI machine.
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda folder: ok([python, "-m", "build", "--no-isolation", "--outdir", out, folder], base),
                      folders))
    yield src, out


def build_env(path: Path, folders: list[Path]) -> Path:
    """The python of one fresh venv holding ``build`` (and its own dependencies) and the union of every
    distribution's ``[build-system] requires``. Shared by every build (``--no-isolation``): an isolated
    environment per sdist and per wheel was 48 venvs installing the same setuptools, the largest single cost
    of the suite. ``build`` still checks each distribution's own requires against it and refuses a build
    whose requires it lacks; a build that needs an undeclared package still fails, since the venv has none."""
    tables = [tomllib.loads((folder / "pyproject.toml").read_text("utf-8"))["build-system"] for folder in folders]
    requires = sorted({r for table in tables for r in table["requires"]})
    ok([sys.executable, "-m", "venv", path], path.parent)
    ok([path / "bin" / "python", "-m", "pip", "install", "-q", "build", *requires], path.parent)
    return path / "bin" / "python"


@pytest.fixture(scope="module")
def core_venv(dists: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a fresh venv holding the core's wheel (and its dependencies) only. Shared by the
    tests of this module to keep them quick; each test leaves it as it found it."""
    _, out = dists
    path = tmp_path_factory.mktemp("venv") / "venv"
    ok([sys.executable, "-m", "venv", path], path.parent)
    core_wheel = next(out.glob("hookstream-*.whl"))  # plugin wheels are named hookstream_NAME-...
    ok([path / "bin" / "python", "-m", "pip", "install", "-q", core_wheel], path.parent)
    where = ok([path / "bin" / "python", "-c", "import hookstream; print(hookstream.__file__)"], path.parent)
    assert where.startswith(str(path)), where  # the installed wheel, not the checkout
    return path / "bin"


def plugin_names(bin_: Path) -> set[str]:
    doc = json.loads(ok([bin_ / "hookstream", "plugins", "--json"], bin_))
    assert doc["failures"] == []
    return {p["name"] for p in doc["plugins"]}


def dist_name(plugin_folder: str) -> str:
    return plugin_folder.replace("-", "_")


def test_every_distribution_builds_an_sdist_and_a_wheel(dists: tuple[Path, Path]) -> None:
    _, out = dists
    for name in ["hookstream", *map(dist_name, PLUGINS)]:
        assert len(list(out.glob(f"{name}-*.tar.gz"))) == 1, sorted(out.iterdir())
        assert len(list(out.glob(f"{name}-*-py3-none-any.whl"))) == 1, sorted(out.iterdir())


SERVER_DEPENDENCIES = ("waitress", "gunicorn", "jwt")
_FIND = "import importlib.util as u; print([m for m in {mods!r} if u.find_spec(m)])"
BLOCKING_SCRIPT = "from hookstream import chat\nprint(chat('test', 'hi').result().text)\n"


def test_the_core_alone_runs_a_blocking_script_without_the_server(core_venv: Path, tmp_path: Path) -> None:
    """``pip install hookstream``: no waitress, gunicorn or PyJWT; a blocking script runs; the server's names
    and ``hookstream serve`` say what to install (issue 39). First of the tests on the shared environment:
    uninstalling the plugin wheels later leaves their dependencies behind."""
    assert ok([core_venv / "python", "-c", _FIND.format(mods=SERVER_DEPENDENCIES)], tmp_path).strip() == "[]"
    (tmp_path / "script.py").write_text(BLOCKING_SCRIPT, encoding="utf-8")
    assert ok([core_venv / "python", "script.py"], tmp_path).strip()
    serve = run([core_venv / "hookstream", "serve", "--demo"], tmp_path)
    assert serve.returncode == 2 and "Traceback" not in serve.stderr, serve.stderr
    assert "needs the hookstream-server plugin: hookstream install hookstream-server" in serve.stderr, serve.stderr
    face = run([core_venv / "python", "-c", "from hookstream.server import Principal; Principal('me'); "
                "from hookstream.server import make_app"], tmp_path)
    assert face.returncode == 1, face.stderr
    assert "ImportError: the server is the hookstream-server plugin" in face.stderr, face.stderr


def test_install_and_uninstall_a_plugin_folder_in_a_core_only_environment(
    dists: tuple[Path, Path], core_venv: Path, tmp_path: Path
) -> None:
    src, _ = dists
    hookstream = core_venv / "hookstream"
    assert plugin_names(core_venv) == {"builtins"}
    missing = run([hookstream, "chat", "hi", "--model", "gemini:gemini-2.0-flash"], tmp_path)
    assert missing.returncode != 0 and "Traceback" not in missing.stderr
    assert "install it with: hookstream install hookstream-gemini" in missing.stderr, missing.stderr

    installed = run([hookstream, "install", "./hookstream-gemini"], src / "plugins")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "Successfully installed hookstream-gemini-0.1.0" in installed.stdout  # pip's own output
    listing = ok([hookstream, "plugins"], tmp_path)
    assert "gemini  [hookstream-gemini 0.1.0]" in listing and "providers: gemini" in listing

    removed = run([hookstream, "uninstall", "hookstream-gemini"], tmp_path)
    assert removed.returncode == 0, removed.stdout + removed.stderr
    assert "Successfully uninstalled hookstream-gemini-0.1.0" in removed.stdout
    assert plugin_names(core_venv) == {"builtins"}


def test_without_pip_install_says_how_to_get_it(core_venv: Path, tmp_path: Path) -> None:
    # A venv made by uv has no pip: install must say how to get one rather than fail with a traceback.
    ok([core_venv / "python", "-m", "pip", "uninstall", "-q", "-y", "pip"], tmp_path)
    try:
        no_pip = run([core_venv / "hookstream", "install", "hookstream-gemini"], tmp_path)
        assert no_pip.returncode == 1 and "Traceback" not in no_pip.stderr
        assert "has no pip" in no_pip.stderr, no_pip.stderr
        advice = f"{core_venv / 'python'} -m ensurepip --upgrade"
        assert advice in no_pip.stderr
        assert f"uv pip install --python {core_venv / 'python'} hookstream-gemini" in no_pip.stderr
    finally:
        ok([core_venv / "python", "-m", "ensurepip", "--upgrade"], tmp_path)  # the advice, followed
    proc = run([core_venv / "hookstream", "install", "--no-index", "hookstream-no-such-plugin-h11"], tmp_path)
    assert "No matching distribution found" in proc.stderr  # pip is back and answering


def test_installed_wheels_run_the_demo_and_list_every_plugin(
    dists: tuple[Path, Path], core_venv: Path, tmp_path: Path
) -> None:
    _, out = dists
    plugin_wheels = sorted(w for w in out.glob("*.whl") if not w.name.startswith("hookstream-"))
    ok([core_venv / "hookstream", "install", "-q", *plugin_wheels], tmp_path)
    try:
        where = ok([core_venv / "python", "-c", "import hookstream_openai; print(hookstream_openai.__file__)"],
                   tmp_path)
        assert where.startswith(str(core_venv.parent)), where  # the installed wheel, not the checkout

        demo = run([core_venv / "hookstream", "demo", "--delay", "0"], tmp_path)
        assert demo.returncode == 0, demo.stdout + demo.stderr
        assert "**250 EUR** is about **40,575 JPY**" in demo.stdout, demo.stdout

        doc = json.loads(ok([core_venv / "hookstream", "plugins", "--json"], tmp_path))
        assert doc["failures"] == []
        dists_by_plugin = {p["name"]: p["distribution"] for p in doc["plugins"]}
        assert dists_by_plugin == {"builtins": "hookstream", "replay": "hookstream-replay",
                                   "openai": "hookstream-openai", "anthropic": "hookstream-anthropic",
                                   "gemini": "hookstream-gemini",
                                   "strategies": "hookstream-strategies", "otel": "hookstream-otel",
                                   "mcp": "hookstream-mcp", "ray": "hookstream-ray",
                                   "azure": "hookstream-azure", "vertex": "hookstream-vertex",
                                   "bedrock": "hookstream-bedrock", "ollama": "hookstream-ollama",
                                   "cache": "hookstream-cache", "guardrails": "hookstream-guardrails",
                                   "compaction": "hookstream-compaction",
                                   "tool-search": "hookstream-toolsearch", "durable": "hookstream-dbos",
                                   "server": "hookstream-server",
                                   "budget": "hookstream-budget",
                                   "provider-batch": "hookstream-provider-batch",
                                   "timing": "hookstream-timing", "process": "hookstream-process",
                                   "batch": "hookstream-batch"}
        assert set(PLUGINS) <= set(dists_by_plugin.values())
        _chat_each_new_provider_on_loopback(core_venv, tmp_path)
    finally:
        ok([core_venv / "hookstream", "uninstall", *PLUGINS], tmp_path)
    assert plugin_names(core_venv) == {"builtins"}


def test_the_serve_extra_gives_the_server(dists: tuple[Path, Path], tmp_path: Path) -> None:
    """``pip install 'hookstream[serve]'`` (the core's wheel with the extra, the plugin's wheel found beside
    it) brings the server plugin and its dependencies: ``hookstream serve --demo`` serves the chat page."""
    _, out = dists
    venv = tmp_path / "venv"
    ok([sys.executable, "-m", "venv", venv], tmp_path)
    bin_ = venv / "bin"
    core_wheel = next(out.glob("hookstream-*.whl"))
    ok([bin_ / "python", "-m", "pip", "install", "-q", "--find-links", out, f"{core_wheel}[serve]"], tmp_path)
    found = ok([bin_ / "python", "-c", _FIND.format(mods=(*SERVER_DEPENDENCIES, "hookstream_server"))], tmp_path)
    assert found.strip() == str(["waitress", "gunicorn", "jwt", "hookstream_server"]), found
    where = ok([bin_ / "python", "-c", "import hookstream.server as s; print(s.make_app.__module__, "
                "s._plugin_face().__file__)"], tmp_path)
    assert where.startswith("hookstream_server.agui ") and str(venv) in where, where
    proc = subprocess.Popen([str(bin_ / "hookstream"), "serve", "--demo", "--port", "0"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env())
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on" in line, line + (proc.stderr.read() if proc.stderr else "")
        url = line.split("listening on ", 1)[1].split()[0]
        import requests

        page = requests.get(url, timeout=30)
        assert page.status_code == 200 and "<html" in page.text.lower()  # web/ is in the plugin's wheel
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# Provider, model, a recording of the plugin's own (tests/recordings), the API root under the server.
NEW_PROVIDERS = [
    ("ollama", "ollama:qwen3:14b", "hookstream-ollama", "ollama__prism__qwen3-14b_tool_calls_two.ndjson", ""),
    ("azure", "azure:gpt-5-mini", "hookstream-azure", "azure-openai-chat__mirascope__v1-gpt5-mini-text-usage.sse", ""),
    ("vertex", "vertex:gemini-2.5-flash", "hookstream-vertex",
     "vertex-gemini__firebase-testdata__thought-summary-reply.sse", ""),
    ("vertex-anthropic", "vertex-anthropic:claude-sonnet-4-5", "hookstream-vertex",
     "vertex-anthropic__mirascope__text.sse", ""),
    ("bedrock", "bedrock:anthropic.claude-3-haiku-20240307-v1:0", "hookstream-bedrock",
     "bedrock__openinference__tool_use_claude3_haiku.eventstream", ""),
]


def _chat_each_new_provider_on_loopback(bin_: Path, tmp_path: Path) -> None:
    """``hookstream chat "hi" --model P:M --base-url http://127.0.0.1:PORT`` in the fresh environment
    answers what the provider's recording holds, for every cloud and local provider (issue 22)."""
    from hookstream.testing import LoopbackServer, Response
    from hookstream.testing.conformance import compare

    env = {**clean_env(), "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "fake-secret-for-loopback",
           "AWS_REGION": "us-east-1", "GOOGLE_CLOUD_PROJECT": "loopback-project", "NO_COLOR": "1"}
    types = {".ndjson": "application/x-ndjson", ".eventstream": "application/vnd.amazon.eventstream"}
    for provider, model, dist, name, root in NEW_PROVIDERS:
        folder = ROOT / "plugins" / dist / "tests" / "recordings"
        body = (folder / name).read_bytes()
        expected = json.loads((folder / "expected" / (Path(name).stem + ".json")).read_text("utf-8"))
        ctype = types.get(Path(name).suffix, "text/event-stream")
        with LoopbackServer([Response(body, content_type=ctype, fragment=(1, 64))], seed=5) as srv:
            proc = subprocess.run([str(bin_ / "hookstream"), "chat", "hi", "--model", model, "--base-url",
                                   srv.url + root, "--max-steps", "1", "--output", "final-json"],
                                  cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, f"{provider}: {proc.stdout}\n{proc.stderr}"
        assert compare(expected, json.loads(proc.stdout)) == [], (provider, proc.stdout)
