"""Stored API keys: ``hookstream keys set openai`` keeps a key in ``keys.json`` in the user directory, and
a provider given no ``api_key`` and finding none of its environment variables uses it (as simonw/llm's
``llm keys set``; there a stored key wins over the environment, here the environment wins, so that a
shell's ``OPENAI_API_KEY=... hookstream chat`` does what it says).

The file is one JSON object, provider name -> key (``{"openai": "sk-..."}``), created with mode 0600
(owner read/write only) and rewritten atomically (write a temporary file of mode 0600, then
``os.replace``), so a reader sees the old or the new file, never half of one. Keys leave this module
only as :class:`~hookstream.plugin.Secret` values (:func:`stored_key`), never in an exception message
or a log line; :func:`key_names` gives the names alone.

Thread safety: reads are plain file reads; two processes setting keys at once may lose one change.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from ._secrets import Secret
from ._userdir import read_string_map, user_dir, write_string_map

__all__ = ["env_or_stored_key", "key_names", "keys_path", "remove_key", "set_key", "stored_key"]


def keys_path() -> Path:
    """The keys file: ``keys.json`` in the user directory (it may not exist)."""
    return user_dir() / "keys.json"


def _load() -> dict[str, str]:
    path = keys_path()
    _warn_if_open(path)
    return read_string_map(path, "provider name -> key")


_warned: set[Path] = set()


def _warn_if_open(path: Path) -> None:
    """Log a warning, once per file and process, when other users may read ``keys.json`` or change the
    directory it is in (and so swap it): the keys are the user's alone (``chmod 600``, ``chmod 700``)."""
    if os.name != "posix" or path in _warned:
        return
    try:
        mode, dir_mode = path.stat().st_mode, path.parent.stat().st_mode
    except OSError:
        return
    problems = ([f"{path} can be read by other users (chmod 600 {path})"] if mode & 0o044 else []) + (
        [f"{path.parent} can be changed by other users (chmod 700 {path.parent})"] if dir_mode & 0o022 else [])
    if problems:
        _warned.add(path)
        logging.getLogger("hookstream.keys").warning("the stored API keys are not private: %s", "; ".join(problems))


def key_names() -> list[str]:
    """The provider names that have a stored key, sorted (never the keys). Raises :class:`ValueError`
    for a file that is not a JSON object of strings (the message names the file, not its content)."""
    return sorted(_load())


def stored_key(provider: str) -> Secret | None:
    """The stored key of ``provider`` (``"openai"``), ``None`` when there is none or the file cannot be
    read (a provider then behaves as with no key: :class:`~hookstream.errors.MissingAPIKeyError`)."""
    try:
        value = _load().get(provider)
    except (OSError, ValueError):
        return None
    return Secret(value) if value else None


def env_or_stored_key(provider: str, env_vars: tuple[str, ...]) -> str | Secret:
    """The API key of a provider given none: the first of ``env_vars`` that is set, else the key stored
    for ``provider`` (:func:`stored_key`), else ``""``. The keys file is read only when no variable is
    set (a stat when it does not exist)."""
    for var in env_vars:
        value = os.environ.get(var)
        if value:
            return value
    if not env_vars or not provider:
        return ""
    return stored_key(provider) or ""


def _save(keys: dict[str, str]) -> None:
    write_string_map(keys_path(), keys)


def set_key(provider: str, key: str) -> None:
    """Store ``key`` for ``provider``, replacing a stored one. Raises :class:`ValueError` for an empty
    key or a provider name with whitespace or a colon (the file is left as it was)."""
    if not provider or ":" in provider or any(c.isspace() for c in provider):
        raise ValueError(f"a key is stored under a provider name (openai, anthropic...), got {provider!r}")
    key = key.strip()
    if not key:
        raise ValueError("the key is empty: nothing stored")
    keys = _load()
    keys[provider] = key
    _save(keys)


def remove_key(provider: str) -> bool:
    """Forget the key of ``provider``; ``False`` when none was stored."""
    keys = _load()
    if keys.pop(provider, None) is None:
        return False
    _save(keys)
    return True
