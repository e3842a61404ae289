"""hookstream provider plugin for Azure OpenAI (``azure:DEPLOYMENT``, ``azure-responses:DEPLOYMENT``).

Names load on first use (PEP 562): the entry point imports this package in every hookstream process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .provider import AzureChatProvider, AzureResponsesProvider

__all__ = ["AzureChatProvider", "AzureResponsesProvider"]

__getattr__, __dir__ = lazy_attributes(__name__, {"AzureChatProvider": "hookstream_azure.provider",
                                                  "AzureResponsesProvider": "hookstream_azure.provider"})
