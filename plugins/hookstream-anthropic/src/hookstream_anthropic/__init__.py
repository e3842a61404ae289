"""hookstream provider plugin for the Anthropic Messages API (provider name ``anthropic``).

Names load on first use (PEP 562): the entry point (``hookstream_anthropic.plugin``) imports this
package in every hookstream process, and the adapter is only needed by a run that calls Anthropic.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .provider import AnthropicProvider
    from .request import ANTHROPIC_VERSION, DEFAULT_MAX_TOKENS
    from .stream import STOP_REASONS

__all__ = ["ANTHROPIC_VERSION", "DEFAULT_MAX_TOKENS", "STOP_REASONS", "AnthropicProvider"]

__getattr__, __dir__ = lazy_attributes(__name__, {"ANTHROPIC_VERSION": "hookstream_anthropic.request",
                                                  "AnthropicProvider": "hookstream_anthropic.provider",
                                                  "DEFAULT_MAX_TOKENS": "hookstream_anthropic.request",
                                                  "STOP_REASONS": "hookstream_anthropic.stream"})
