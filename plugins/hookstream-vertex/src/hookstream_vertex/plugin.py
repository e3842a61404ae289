"""Entry point of the ``hookstream-vertex`` distribution (group ``hookstream``, name ``vertex``):
registers the ``vertex`` (Gemini) and ``vertex-anthropic`` (Claude) providers."""

from __future__ import annotations

from hookstream.plugin import ProviderRegistrar, hookimpl


@hookimpl
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    """Register :class:`~hookstream_vertex.gemini.VertexProvider` as ``vertex`` and
    :class:`~hookstream_vertex.anthropic.VertexAnthropicProvider` as ``vertex-anthropic``."""
    # Imported here: loading every plugin's entry point at start-up should not import google-auth.
    from .anthropic import VertexAnthropicProvider
    from .gemini import VertexProvider

    register("vertex", VertexProvider)
    register("vertex-anthropic", VertexAnthropicProvider)
