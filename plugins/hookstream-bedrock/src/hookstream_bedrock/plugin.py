"""hookstream plugin entry point (group ``hookstream``, name ``bedrock``): registers the provider."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookstream.plugin import hookimpl


@hookimpl
def hookstream_register_providers(register: Callable[[str, type[Any]], None]) -> None:
    """Register :class:`~hookstream_bedrock.provider.BedrockProvider` as ``bedrock``."""
    from .provider import BedrockProvider

    register("bedrock", BedrockProvider)
