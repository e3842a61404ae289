"""hookstream plugin entry point (group ``hookstream``, name ``anthropic``): registers the provider."""

from __future__ import annotations

from hookstream.plugin import ModelRegistrar, ProviderRegistrar, hookimpl

# Capabilities of well-known models, from Anthropic's models overview: (image input, tool calls, extended
# thinking, context window in tokens). Prices are not here: hookstream takes them from genai-prices.
MODELS: dict[str, tuple[bool, bool, bool, int]] = {
    "claude-3-7-sonnet-20250219": (True, True, True, 200_000),
    "claude-sonnet-4-20250514": (True, True, True, 200_000),
    "claude-opus-4-20250514": (True, True, True, 200_000),
    "claude-opus-4-1": (True, True, True, 200_000),
    "claude-sonnet-4-5": (True, True, True, 200_000),
    "claude-haiku-4-5": (True, True, True, 200_000),
}


@hookimpl
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    """Register :class:`~hookstream_anthropic.provider.AnthropicProvider` as ``anthropic`` (imported on
    first use: every hookstream process loads this entry point)."""
    register("anthropic", "hookstream_anthropic.provider:AnthropicProvider")


@hookimpl
def hookstream_register_models(register: ModelRegistrar) -> None:
    """Register the capabilities of :data:`MODELS` under ``anthropic``."""
    from hookstream.plugin import ModelCapabilities

    for model, (vision, tools, reasoning, window) in MODELS.items():
        register(f"anthropic:{model}",
                 ModelCapabilities(vision=vision, tools=tools, reasoning=reasoning, context_window=window))
