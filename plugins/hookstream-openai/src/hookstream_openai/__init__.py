"""hookstream provider plugin for OpenAI: Chat Completions (``openai``) and Responses (``openai-responses``).

Names load on first use (PEP 562): the entry point imports this package in every hookstream process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .chat import OpenAIChatProvider
    from .responses import OpenAIResponsesProvider

__all__ = ["OpenAIChatProvider", "OpenAIResponsesProvider"]

__getattr__, __dir__ = lazy_attributes(__name__, {"OpenAIChatProvider": "hookstream_openai.chat",
                                                  "OpenAIResponsesProvider": "hookstream_openai.responses"})
