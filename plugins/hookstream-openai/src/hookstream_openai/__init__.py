"""hookstream provider plugin for OpenAI: Chat Completions (``openai``) and Responses (``openai-responses``)."""

from .chat import OpenAIChatProvider
from .responses import OpenAIResponsesProvider

__all__ = ["OpenAIChatProvider", "OpenAIResponsesProvider"]
