"""Model aliases: short names for ``"PROVIDER:MODEL"`` strings, kept in a user config file.

``hookstream aliases set fast openai:gpt-4o-mini`` writes ``aliases.json`` in the user directory
(:func:`hookstream._userdir.user_dir`: ``$HOOKSTREAM_USER_DIR`` or platformdirs' user data directory);
from then on ``chat("fast", ...)``, ``get_model("fast")`` and ``hookstream chat --model fast`` mean
``openai:gpt-4o-mini``. The file is one JSON object, alias -> model string, and may be edited by hand.

An alias name has no colon (so it never shadows a ``"PROVIDER:MODEL"`` string) and its value has one;
an alias does not name another alias. :func:`resolve_alias` reads the file on each call, so only a
model string without a colon costs a file read, and another process's change applies at once.

Thread safety: reads are plain file reads; a write replaces the file atomically (write, then
``os.replace``), so a reader sees the old or the new file, never half of one. Two processes setting
aliases at the same moment may lose one of the two changes.
"""

from __future__ import annotations

from pathlib import Path

from ._userdir import read_string_map, user_dir, write_string_map

__all__ = ["aliases_path", "load_aliases", "remove_alias", "resolve_alias", "set_alias"]


def aliases_path() -> Path:
    """The aliases file: ``aliases.json`` in the user directory (it may not exist)."""
    return user_dir() / "aliases.json"


def load_aliases() -> dict[str, str]:
    """Every alias, name -> ``"PROVIDER:MODEL"`` (empty when there is no file). Raises
    :class:`ValueError` for a file that is not a JSON object of strings."""
    return read_string_map(aliases_path(), "alias -> 'PROVIDER:MODEL'")


def _save(aliases: dict[str, str]) -> None:
    write_string_map(aliases_path(), aliases)


def set_alias(name: str, model: str) -> None:
    """Make ``name`` mean ``model`` (``"PROVIDER:MODEL"``), replacing an alias of that name. Raises
    :class:`ValueError` for a name with a colon or whitespace, or a model without a provider prefix."""
    if not name or ":" in name or any(c.isspace() for c in name):
        raise ValueError(f"an alias is a name without ':' or spaces, got {name!r}")
    provider, sep, model_name = model.partition(":")
    if not (provider and sep and model_name):
        raise ValueError(f"an alias stands for 'PROVIDER:MODEL' (e.g. 'openai:gpt-4o-mini'), got {model!r}")
    aliases = load_aliases()
    aliases[name] = model
    _save(aliases)


def remove_alias(name: str) -> bool:
    """Forget the alias ``name``; ``False`` when there was none."""
    aliases = load_aliases()
    if aliases.pop(name, None) is None:
        return False
    _save(aliases)
    return True


def resolve_alias(model: str) -> str:
    """``model`` itself when it has a colon or no alias has that name, else the alias's model string."""
    if ":" in model:
        return model
    return load_aliases().get(model, model)
