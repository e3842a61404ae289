"""Entry point of the ``hookstream-gemini`` distribution: registers the ``gemini`` provider."""

from __future__ import annotations

from hookstream.plugin import ProviderRegistrar, hookimpl


@hookimpl
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    """Register :class:`hookstream_gemini.provider.GeminiProvider` as ``gemini`` (imported on first use)."""
    register("gemini", "hookstream_gemini.provider:GeminiProvider")
