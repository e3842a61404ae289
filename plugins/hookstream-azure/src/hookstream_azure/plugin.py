"""Entry point of the hookstream-azure distribution: registers ``azure`` and ``azure-responses``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookstream.plugin import hookimpl


@hookimpl
def hookstream_register_providers(register: Callable[[str, type[Any]], None]) -> None:
    """Register ``azure`` (Chat Completions) and ``azure-responses`` (Responses API) on Azure OpenAI."""
    from .provider import AzureChatProvider, AzureResponsesProvider

    register(AzureChatProvider.name, AzureChatProvider)
    register(AzureResponsesProvider.name, AzureResponsesProvider)
