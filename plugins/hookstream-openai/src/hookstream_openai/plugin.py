"""Entry point of the hookstream-openai distribution: registers its two providers with hookstream."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookstream.plugin import hookimpl


@hookimpl
def hookstream_register_providers(register: Callable[[str, type[Any]], None]) -> None:
    """Register ``openai`` (Chat Completions and compatible servers) and ``openai-responses``."""
    from .chat import OpenAIChatProvider
    from .responses import OpenAIResponsesProvider

    register(OpenAIChatProvider.name, OpenAIChatProvider)
    register(OpenAIResponsesProvider.name, OpenAIResponsesProvider)
