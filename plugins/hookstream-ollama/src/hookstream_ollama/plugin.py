"""Entry point of the hookstream-ollama distribution: registers the ``ollama`` provider."""

from __future__ import annotations

from hookstream.plugin import ProviderRegistrar, hookimpl


@hookimpl
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    """Register ``ollama`` (Ollama's native ``/api/chat``, NDJSON), imported on first use."""
    register("ollama", "hookstream_ollama.provider:OllamaProvider")
