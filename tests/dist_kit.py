"""Real installed-looking plugin distributions for CLI tests: a ``*.dist-info`` directory with
``entry_points.txt`` beside the plugin's module, on a path of its own that a subprocess running the
``hookstream`` command line gets on ``PYTHONPATH`` (so ``importlib.metadata`` finds it, as it finds a
``pip install``-ed one)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

__all__ = ["make_dist", "run_cli"]


def make_dist(tmp: Path, name: str, module_src: str) -> Path:
    """A real installed-looking distribution (dist-info with entry points) on a path of its own."""
    site = tmp / f"site-{name}"
    site.mkdir()
    (site / f"{name}_mod.py").write_text(textwrap.dedent(module_src))
    info = site / f"{name}-1.2.3.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.2.3\n")
    (info / "entry_points.txt").write_text(f"[hookstream]\n{name} = {name}_mod\n")
    return site


def run_cli(args: list[str], paths: list[Path], **env: str) -> subprocess.CompletedProcess[str]:
    """``python -m hookstream ARGS`` with ``paths`` on ``PYTHONPATH`` and ``env`` added."""
    full_env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, paths)), **env}
    return subprocess.run([sys.executable, "-m", "hookstream", *args], capture_output=True, text=True,
                          env=full_env, timeout=60)
