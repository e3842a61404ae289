"""What to type to install a first-party piece: the hint in every "needs X" message.

Nothing is on the package index yet, so ``pip install hookstream-ollama`` fails. When the core runs
from a checkout of the repository (``./dev demo``, ``pip install -e .``), the plugins sit in its
``plugins/`` folder and the hint names that folder: ``hookstream install ./plugins/hookstream-ollama``
(relative to the current directory when it is inside the checkout, else the absolute path). Installed
from a wheel, the core cannot know where the plugins are and the hint names the distribution.

Thread safety: pure functions of the file system and the current directory.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shlex
from pathlib import Path

__all__ = ["checkout_folder", "first_party_spec", "install_command"]

_REQUIREMENT = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?P<extras>\[[A-Za-z0-9,._ -]+\])?$")


@functools.cache
def _checkout_root() -> Path | None:
    # core/hookstream/_install_hint.py -> the repository root, when the core runs from a checkout.
    root = Path(__file__).resolve().parents[2]
    if (root / "plugins").is_dir() and (root / "core" / "hookstream").is_dir() and (root / "setup.cfg").is_file():
        return root
    return None


def checkout_folder(distribution: str) -> Path | None:
    """The folder of first-party ``distribution`` (``"hookstream-ollama"``; ``"hookstream"`` is the
    core) in the checkout the core runs from, or ``None`` (no checkout, or no such folder)."""
    root = _checkout_root()
    if root is None:
        return None
    folder = root if distribution == "hookstream" else root / "plugins" / distribution
    return folder if (folder / "setup.cfg").is_file() or (folder / "pyproject.toml").is_file() else None


def _shown(path: Path) -> str:
    try:
        rel = path.relative_to(Path.cwd().resolve())
    except ValueError:
        return str(path)
    return "." if str(rel) == "." else f"./{rel}"


@functools.cache
def _core_editable() -> bool:
    # pip records an editable install in direct_url.json (PEP 610): then the hint keeps it editable.
    import importlib.metadata

    try:
        text = importlib.metadata.distribution("hookstream").read_text("direct_url.json")
    except importlib.metadata.PackageNotFoundError:
        return False
    try:
        return bool(json.loads(text or "{}").get("dir_info", {}).get("editable"))
    except (ValueError, AttributeError):
        return False


def install_command(requirement: str) -> str:
    """The command that installs ``requirement``, a first-party distribution with optional extras
    (``"hookstream-ollama"``, ``"hookstream-ray[ray]"``, ``"hookstream[serve]"``): ``hookstream install
    ./plugins/hookstream-ollama`` (its checkout folder; ``-e`` for the core's extras when the core is an
    editable install) or, without a checkout, ``hookstream install hookstream-ollama``. Shell-quoted
    where extras need it."""
    match = _REQUIREMENT.match(requirement.strip())
    if match is None:
        return f"hookstream install {shlex.quote(requirement)}"
    name, extras = match["name"], match["extras"] or ""
    folder = checkout_folder(name)
    if folder is None:
        return f"hookstream install {shlex.quote(requirement)}"
    editable = "-e " if name == "hookstream" and _core_editable() else ""
    return f"hookstream install {editable}{shlex.quote(_shown(folder) + extras)}"


def first_party_spec(spec: str) -> str | None:
    """``spec`` (an argument of ``hookstream install``) as its checkout folder when it names a
    first-party plugin (``hookstream-ollama``, ``hookstream-ray[ray]``) and the core runs from a
    checkout, else ``None`` (pip is given ``spec`` as it is)."""
    match = _REQUIREMENT.match(spec)
    if match is None or not match["name"].startswith("hookstream-") or os.path.exists(spec):
        return None
    folder = checkout_folder(match["name"])
    return None if folder is None else str(folder) + (match["extras"] or "")
