"""hookstream provider plugin for Amazon Bedrock ``ConverseStream`` (provider name ``bedrock``)."""

from .framing import EVENT_STREAM, MEDIA_TYPE, EventStreamFraming
from .provider import CREDENTIALS_HINT, DEFAULT_BASE_URL, BedrockProvider
from .stream import STOP_REASONS

__all__ = ["CREDENTIALS_HINT", "DEFAULT_BASE_URL", "EVENT_STREAM", "MEDIA_TYPE", "STOP_REASONS", "BedrockProvider",
           "EventStreamFraming"]
