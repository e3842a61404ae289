"""hookstream provider plugin for Amazon Bedrock ``ConverseStream`` (provider name ``bedrock``).

Names load on first use (PEP 562): the entry point imports this package in every hookstream process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .framing import EVENT_STREAM, MEDIA_TYPE, EventStreamFraming
    from .provider import CREDENTIALS_HINT, DEFAULT_BASE_URL, BedrockProvider
    from .stream import STOP_REASONS

__all__ = ["CREDENTIALS_HINT", "DEFAULT_BASE_URL", "EVENT_STREAM", "MEDIA_TYPE", "STOP_REASONS", "BedrockProvider",
           "EventStreamFraming"]

__getattr__, __dir__ = lazy_attributes(__name__, {
    **dict.fromkeys(("EVENT_STREAM", "MEDIA_TYPE", "EventStreamFraming"), "hookstream_bedrock.framing"),
    **dict.fromkeys(("CREDENTIALS_HINT", "DEFAULT_BASE_URL", "BedrockProvider"), "hookstream_bedrock.provider"),
    "STOP_REASONS": "hookstream_bedrock.stream",
})
