"""hookstream provider plugin for Ollama's native chat API (``ollama:MODEL``).

Names load on first use (PEP 562): the entry point imports this package in every hookstream process.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .provider import OllamaProvider

__all__ = ["OllamaProvider"]

__getattr__, __dir__ = lazy_attributes(__name__, {"OllamaProvider": "hookstream_ollama.provider"})
