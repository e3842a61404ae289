"""hookstream provider plugin for the Gemini API and Vertex AI Gemini streams (provider ``gemini``).

Names load on first use (PEP 562): the entry point imports this package in every hookstream process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .provider import GeminiProvider

__all__ = ["GeminiProvider"]

__getattr__, __dir__ = lazy_attributes(__name__, {"GeminiProvider": "hookstream_gemini.provider"})
