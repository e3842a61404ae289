"""Entry point of the hookstream-azure distribution: registers ``azure`` and ``azure-responses``."""

from __future__ import annotations

from hookstream.plugin import ProviderRegistrar, hookimpl


@hookimpl
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    """Register ``azure`` (Chat Completions) and ``azure-responses`` (Responses API) on Azure OpenAI,
    imported on first use."""
    register("azure", "hookstream_azure.provider:AzureChatProvider")
    register("azure-responses", "hookstream_azure.provider:AzureResponsesProvider")
