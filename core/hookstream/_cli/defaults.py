"""The default model of the command line, as simonw/llm's ``llm models default``.

``hookstream models default openai:gpt-4o-mini`` writes ``default_model.txt`` in the user directory
(``$HOOKSTREAM_USER_DIR``, else platformdirs' user data directory); ``$HOOKSTREAM_MODEL``, when set,
wins over it. ``hookstream chat`` without ``-m/--model`` uses, in order: the model of the conversation
it continues (``-c``, ``--cid``), ``$HOOKSTREAM_MODEL``, the stored default (:func:`chat_model`).
"""

from __future__ import annotations

import os
from pathlib import Path

import click

from .._userdir import user_dir

__all__ = ["MODEL_ENV", "chat_model", "default_model", "default_model_path", "set_default_model"]

MODEL_ENV = "HOOKSTREAM_MODEL"


def default_model_path() -> Path:
    """The file holding the stored default model (it may not exist)."""
    return user_dir() / "default_model.txt"


def default_model() -> tuple[str | None, str]:
    """The default model and where it comes from (``"$HOOKSTREAM_MODEL"`` or the file's path);
    ``(None, "")`` when none is set."""
    env = os.environ.get(MODEL_ENV, "").strip()
    if env:
        return env, f"${MODEL_ENV}"
    path = default_model_path()
    try:
        stored = path.read_text(encoding="utf-8").strip()
    except (FileNotFoundError, NotADirectoryError):
        return None, ""
    return (stored, str(path)) if stored else (None, "")


def set_default_model(model: str) -> None:
    """Store ``model`` (``PROVIDER:MODEL`` or an alias) as the default. Raises :class:`click.UsageError`
    for a blank name."""
    model = model.strip()
    if not model or any(c.isspace() for c in model):
        raise click.UsageError(f"a model is PROVIDER:MODEL (or an alias), got {model!r}")
    path = default_model_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(model + "\n", encoding="utf-8")


def chat_model(given: str | None, conversation_model: str | None = None) -> str:
    """The model a run uses: ``given`` (``-m/--model``), else the continued conversation's, else the
    default (:func:`default_model`). Raises :class:`click.UsageError` saying how to set one."""
    if given:
        return given
    if conversation_model:
        return conversation_model
    model, _ = default_model()
    if model:
        return model
    raise click.UsageError("no model: give -m PROVIDER:MODEL, or set a default with "
                           "`hookstream models default PROVIDER:MODEL` (or $HOOKSTREAM_MODEL)")
