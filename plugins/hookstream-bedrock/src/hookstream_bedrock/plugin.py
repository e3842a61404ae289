"""hookstream plugin entry point (group ``hookstream``, name ``bedrock``): registers the provider."""

from __future__ import annotations

from hookstream.plugin import ProviderRegistrar, hookimpl


@hookimpl
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    """Register :class:`~hookstream_bedrock.provider.BedrockProvider` as ``bedrock`` (imported on first use)."""
    register("bedrock", "hookstream_bedrock.provider:BedrockProvider")
