"""hookstream provider plugin for Vertex AI: Gemini (``vertex:MODEL``) and Claude (``vertex-anthropic:MODEL``).

The adapters reuse the Gemini and Anthropic plugins' body builders and stream parsers; this package
adds Google credentials (:mod:`hookstream_vertex.base`) and the Vertex AI URLs.
"""

from __future__ import annotations

from .anthropic import VERTEX_ANTHROPIC_VERSION, VertexAnthropicProvider
from .base import CLOUD_PLATFORM_SCOPE, VertexBase, vertex_host
from .gemini import VertexProvider

__all__ = [
    "CLOUD_PLATFORM_SCOPE",
    "VERTEX_ANTHROPIC_VERSION",
    "VertexAnthropicProvider",
    "VertexBase",
    "VertexProvider",
    "vertex_host",
]
