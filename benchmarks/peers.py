"""The peer libraries hookstream is compared with, each in its own virtual environment.

``python benchmarks/peers.py [NAME ...]`` creates (or reuses) ``benchmarks/.venvs/<name>`` for each peer
and pip-installs its requirements there; ``bench_pipeline --peers`` calls :func:`ensure` itself. A venv
is reused while its ``.requirements`` stamp matches :data:`VENVS`; delete the directory to reinstall.
Peers never share a venv with hookstream or with each other, so one's imports, patches or pinned
dependencies cannot change another's figures.

:data:`CLIENTS` maps each client name that ``clients.py`` knows to the venv it runs in; the floor and
hookstream run with the interpreter running the benchmark (``sys.executable``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENV_ROOT = HERE / ".venvs"

VENVS: dict[str, list[str]] = {
    "openai": ["openai"],
    "anthropic": ["anthropic"],
    "litellm": ["litellm"],
    "llm": ["llm"],
    "pydantic-ai": ["pydantic-ai-slim[openai]"],
    "openai-agents": ["openai-agents"],
}

CLIENTS: dict[str, str] = {
    "openai-create": "openai",
    "openai-stream": "openai",
    "anthropic-stream": "anthropic",
    "litellm": "litellm",
    "llm": "llm",
    "pydantic-ai": "pydantic-ai",
    "openai-agents": "openai-agents",
}


def python_of(venv: str) -> Path:
    return VENV_ROOT / venv / "bin" / "python"


def ensure(venv: str, *, quiet: bool = True) -> Path:
    """The venv's interpreter, creating the venv and installing its requirements when needed.

    Raises :class:`subprocess.CalledProcessError` when ``venv`` or ``pip install`` fails."""
    reqs = VENVS[venv]
    root = VENV_ROOT / venv
    stamp = root / ".requirements"
    want = "\n".join(reqs) + "\n"
    if stamp.exists() and stamp.read_text() == want and python_of(venv).exists():
        return python_of(venv)
    print(f"# creating {root} and installing {' '.join(reqs)} (once)", file=sys.stderr, flush=True)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(root)], check=True)
    subprocess.run([str(python_of(venv)), "-m", "pip", "install", *(["-q"] if quiet else []), *reqs], check=True)
    stamp.write_text(want)
    return python_of(venv)


def versions(venv: str) -> dict[str, str]:
    """Installed distribution versions of the venv's requirements (names without extras)."""
    names = [r.split("[")[0] for r in VENVS[venv]]
    code = ("import importlib.metadata as m, json, sys;"
            "print(json.dumps({n: m.version(n) for n in sys.argv[1:]}))")
    out = subprocess.run([str(python_of(venv)), "-c", code, *names], check=True, capture_output=True, text=True)
    import json

    return dict(json.loads(out.stdout))


if __name__ == "__main__":
    for name in sys.argv[1:] or list(VENVS):
        ensure(name, quiet=False)
        print(name, versions(name))
