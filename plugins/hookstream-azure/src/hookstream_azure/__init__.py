"""hookstream provider plugin for Azure OpenAI (``azure:DEPLOYMENT``, ``azure-responses:DEPLOYMENT``)."""

from .provider import AzureChatProvider, AzureResponsesProvider

__all__ = ["AzureChatProvider", "AzureResponsesProvider"]
