"""Reading a docs guide the way its reader does: the files it shows under their paths, and the commands it
shows with the output it promises.

The conventions the plugin guides (``docs/writing-a-provider-plugin.md``, ``docs/tutorial-chunk-strategy.md``)
follow, so a test can follow them literally:

- A *file block* is a fenced block right after a line holding only the file's path in backticks and a
  colon, then a blank line::

      `hookstream-echo/pyproject.toml`:

      ```toml
      [build-system]
      ```

  The block's lines are the whole file. Paths are relative to the folder the guide starts in.
- The *commands* are the lines starting with ``$ `` in ```` ```console ```` blocks, typed in that order into
  one shell started in that folder. The lines after a command, up to the next command, are output the
  command must print (in that order; other lines may come between them).

``tests/test_docs_samples.py`` does not run the ```` ```python ```` file blocks as samples: they are modules of
the guide's package.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path, PurePosixPath

import attrs

__all__ = ["FILE_LINE", "Command", "commands", "files", "write_plugin"]

FILE_LINE = r"^`(?P<path>[^`\s]+)`:\n\n"
"""The line announcing a file block (a regular expression, multiline mode)."""
_FILE_BLOCK = re.compile(FILE_LINE + r"```[\w-]*\n(?P<code>.*?)^```[ \t]*$", re.M | re.S)
_CONSOLE = re.compile(r"^```console\n(?P<body>.*?)^```[ \t]*$", re.M | re.S)


@attrs.define(slots=True, frozen=True)
class Command:
    line: str
    output: tuple[str, ...]


def files(text: str) -> dict[str, str]:
    """Path -> content of every file block of a guide, in page order. Raises ``ValueError`` for a path that
    is absolute or climbs out of the folder, or a path shown twice."""
    out: dict[str, str] = {}
    for m in _FILE_BLOCK.finditer(text):
        path = PurePosixPath(m.group("path"))
        if path.is_absolute() or ".." in path.parts:
            raise ValueError(f"file block path {path} is outside the guide's folder")
        if str(path) in out:
            raise ValueError(f"file block {path} is shown twice")
        out[str(path)] = m.group("code")
    return out


def commands(text: str) -> list[Command]:
    """The commands of every console block of a guide, in page order, each with the output lines it shows."""
    out: list[Command] = []
    for m in _CONSOLE.finditer(text):
        current: list[str] | None = None
        line = ""
        for raw in m.group("body").splitlines():
            if raw.startswith("$ "):
                if current is not None:
                    out.append(Command(line, tuple(current)))
                line, current = raw[2:], []
            elif current is not None and raw.strip():
                current.append(raw.rstrip())
        if current is not None:
            out.append(Command(line, tuple(current)))
    return out


def write_plugin(doc: Path, tmp: Path, plugin: str) -> dict[str, str]:
    """Write a guide's files under ``tmp`` and, beside the plugin folder ``plugin``'s ``src``, the dist-info
    that installing it would leave for importlib.metadata (its entry points), so a process with ``src`` on
    ``PYTHONPATH`` finds the plugin (tests/test_plugin_guides.py installs guides for real, in a fresh venv;
    this is the quick check). Returns the files by path."""
    written = files(doc.read_text("utf-8"))
    for rel, code in written.items():
        target = tmp / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(code)
    project = tomllib.loads(written[f"{plugin}/pyproject.toml"])["project"]
    info = tmp / plugin / "src" / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    eps = project["entry-points"]["hookstream"]
    (info / "entry_points.txt").write_text("[hookstream]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items()))
    return written
