"""hookstream plugin entry point (group ``hookstream``, name ``anthropic``): registers the provider."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookstream.plugin import hookimpl


@hookimpl
def hookstream_register_providers(register: Callable[[str, type[Any]], None]) -> None:
    """Register :class:`~hookstream_anthropic.provider.AnthropicProvider` as ``anthropic``."""
    from .provider import AnthropicProvider

    register("anthropic", AnthropicProvider)
