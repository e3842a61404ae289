"""Where hookstream keeps a user's files: ``$HOOKSTREAM_USER_DIR``, else platformdirs' user data directory
(``~/.local/share/hookstream`` on Linux, ``~/Library/Application Support/hookstream`` on macOS), and the
one reader and writer of its small JSON files of name -> string (model aliases, stored API keys).

Below the rest of the core so that both the CLI (``hookstream logs``) and :func:`hookstream.get_model`
(model aliases) can read it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["USER_DIR_ENV", "private_dirs", "read_string_map", "user_dir", "write_string_map"]

USER_DIR_ENV = "HOOKSTREAM_USER_DIR"


def user_dir() -> Path:
    """Where hookstream keeps its files: ``$HOOKSTREAM_USER_DIR``, else platformdirs' user data directory."""
    env = os.environ.get(USER_DIR_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("hookstream", appauthor=False))


def private_dirs(directory: Path) -> None:
    """Create ``directory`` and its missing parents with mode 0700 whatever the umask (a directory others
    may write to lets them swap the files in it, ``keys.json`` included); existing ones are left as
    they are. Raises :class:`OSError`."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for d in reversed(missing):
        try:
            d.mkdir(mode=0o700)
        except FileExistsError:
            continue
        if os.name == "posix":
            d.chmod(0o700)  # mkdir's mode is masked by the umask only to be narrower; 000 would leave 0777


def read_string_map(path: Path, what: str) -> dict[str, str]:
    """The JSON object of strings at ``path`` (empty when there is no file). Raises :class:`ValueError`
    naming ``path`` and ``what`` the object should map (e.g. ``"provider name -> key"``) for a file that is
    not such an object; the message never quotes the file (it may hold secrets)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        # The parser's message quotes the text around the error (a key, in keys.json): say where only.
        raise ValueError(f"{path} is not valid JSON (fix or delete it)") from None
    if not isinstance(data, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in data.items()):
        raise ValueError(f"{path} must be a JSON object of {what} strings")
    return data


def write_string_map(path: Path, data: dict[str, str]) -> None:
    """Replace the file at ``path`` with ``data`` as a JSON object (sorted keys), atomically: a temporary
    file created with mode 0600 (owner read/write only) before anything is written to it, then
    ``os.replace``, so a reader sees the old or the new file, never half of one. Raises :class:`OSError`."""
    import tempfile  # only a write needs it; reading (every provider construction) does not

    private_dirs(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=path.suffix, dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(dict(sorted(data.items())), f, indent=2)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
