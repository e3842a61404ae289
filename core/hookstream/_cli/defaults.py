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

from .._secrets import Secret
from .._userdir import user_dir

__all__ = ["MODEL_ENV", "chat_model", "cli_key", "default_model", "default_model_path", "full_model_name",
           "set_default_model"]

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
        return full_model_name(given)
    if conversation_model:
        return conversation_model
    model, _ = default_model()
    if model:
        return full_model_name(model)
    raise click.UsageError("no model: give -m PROVIDER:MODEL, or set a default with "
                           "`hookstream models default PROVIDER:MODEL` (or $HOOKSTREAM_MODEL)")


def full_model_name(model: str) -> str:
    """``model`` with its provider when it is a bare model name the catalogue knows (``gpt-4o-mini`` ->
    ``openai:gpt-4o-mini``, as simonw/llm's ``-m gpt-4o-mini``); ``PROVIDER:MODEL``, an alias, ``test``
    or a name the catalogue does not know are returned unchanged (the run says what is wrong). When
    several providers list the name, the model's own provider is taken (``openai`` over
    ``openai-responses``, ``anthropic`` over ``vertex-anthropic``); raises :class:`click.UsageError`
    naming the choices when none is that."""
    if ":" in model or model == "test":
        return model
    from .._aliases import resolve_alias

    if resolve_alias(model) != model:
        return model
    from .._models import models

    try:
        providers = sorted({m.provider for m in models() if m.model == model})
    except Exception:  # a plugin's or the price data's failure must not hide the real error
        return model
    # The model's own provider over the routes that also serve it (openai over openai-responses, anthropic
    # over vertex-anthropic): the one whose name is a part of every other's.
    home = [p for p in providers if all(p in o.split("-") for o in providers if o != p)]
    if len(home) == 1:
        return f"{home[0]}:{model}"
    if providers:
        choices = ", ".join(f"{p}:{model}" for p in providers)
        raise click.UsageError(f"model {model!r} is served by several providers: give one of {choices}")
    return model


def cli_key(given: str | None) -> Secret | None:
    """The ``--key`` option as simonw/llm reads it: the name of a stored key (``hookstream keys set NAME``)
    gives that key, anything else is the key itself; ``None`` when not given (the provider's own lookup)."""
    if given is None:
        return None
    from .._keys import stored_key

    return stored_key(given) if " " not in given and stored_key(given) is not None else Secret(given)
