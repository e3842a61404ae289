"""Entry point of the ``hookstream-gemini`` distribution: registers the ``gemini`` provider."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookstream.plugin import hookimpl


@hookimpl
def hookstream_register_providers(register: Callable[[str, type[Any]], None]) -> None:
    """Register :class:`hookstream_gemini.provider.GeminiProvider` as ``gemini``."""
    from .provider import GeminiProvider

    register("gemini", GeminiProvider)
