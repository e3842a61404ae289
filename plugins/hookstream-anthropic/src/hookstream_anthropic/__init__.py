"""hookstream provider plugin for the Anthropic Messages API (provider name ``anthropic``)."""

from .provider import ANTHROPIC_VERSION, AnthropicProvider
from .request import DEFAULT_MAX_TOKENS
from .stream import STOP_REASONS

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_MAX_TOKENS", "STOP_REASONS", "AnthropicProvider"]
