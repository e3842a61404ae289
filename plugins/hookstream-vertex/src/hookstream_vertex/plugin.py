"""Entry point of the ``hookstream-vertex`` distribution (group ``hookstream``, name ``vertex``):
registers the ``vertex`` (Gemini) and ``vertex-anthropic`` (Claude) providers."""

from __future__ import annotations

from hookstream.plugin import ProviderRegistrar, hookimpl


@hookimpl
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    """Register :class:`~hookstream_vertex.gemini.VertexProvider` as ``vertex`` and
    :class:`~hookstream_vertex.anthropic.VertexAnthropicProvider` as ``vertex-anthropic``."""
    # Imported on first use: loading every plugin's entry point at start-up must not import google-auth
    # or the Gemini and Anthropic adapters.
    register("vertex", "hookstream_vertex.gemini:VertexProvider")
    register("vertex-anthropic", "hookstream_vertex.anthropic:VertexAnthropicProvider")
