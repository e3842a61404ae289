"""hookstream provider plugin for the Gemini API and Vertex AI Gemini streams (provider ``gemini``)."""

from __future__ import annotations

from .provider import GeminiProvider

__all__ = ["GeminiProvider"]
