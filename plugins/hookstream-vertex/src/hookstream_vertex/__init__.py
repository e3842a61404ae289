"""hookstream provider plugin for Vertex AI: Gemini (``vertex:MODEL``) and Claude (``vertex-anthropic:MODEL``).

The adapters reuse the Gemini and Anthropic plugins' body builders and stream parsers; this package
adds Google credentials (:mod:`hookstream_vertex.base`) and the Vertex AI URLs.

Names load on first use (PEP 562): the entry point imports this package in every hookstream process,
and google-auth is only needed by a run that calls Vertex AI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
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

__getattr__, __dir__ = lazy_attributes(__name__, {
    **dict.fromkeys(("VERTEX_ANTHROPIC_VERSION", "VertexAnthropicProvider"), "hookstream_vertex.anthropic"),
    **dict.fromkeys(("CLOUD_PLATFORM_SCOPE", "VertexBase", "vertex_host"), "hookstream_vertex.base"),
    "VertexProvider": "hookstream_vertex.gemini",
})
