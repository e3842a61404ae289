"""Entry point of the hookstream-ollama distribution: registers the ``ollama`` provider."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookstream.plugin import hookimpl


@hookimpl
def hookstream_register_providers(register: Callable[[str, type[Any]], None]) -> None:
    """Register ``ollama`` (Ollama's native ``/api/chat``, NDJSON)."""
    from .provider import OllamaProvider

    register(OllamaProvider.name, OllamaProvider)
