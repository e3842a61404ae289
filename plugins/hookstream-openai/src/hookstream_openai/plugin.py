"""Entry point of the hookstream-openai distribution: registers its two providers with hookstream."""

from __future__ import annotations

from hookstream.plugin import ModelRegistrar, ProviderRegistrar, hookimpl

# Capabilities of well-known models, from OpenAI's model pages: (image input, tool calls, reasoning,
# context window in tokens). Prices are not here: hookstream takes them from genai-prices.
MODELS: dict[str, tuple[bool, bool, bool, int]] = {
    "gpt-4o": (True, True, False, 128_000),
    "gpt-4o-mini": (True, True, False, 128_000),
    "gpt-4.1": (True, True, False, 1_047_576),
    "gpt-4.1-mini": (True, True, False, 1_047_576),
    "gpt-4.1-nano": (True, True, False, 1_047_576),
    "o3": (True, True, True, 200_000),
    "o3-mini": (False, True, True, 200_000),
    "o4-mini": (True, True, True, 200_000),
    "gpt-5": (True, True, True, 400_000),
    "gpt-5-mini": (True, True, True, 400_000),
}


@hookimpl
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    """Register ``openai`` (Chat Completions and compatible servers) and ``openai-responses``, each
    imported on first use (every hookstream process loads this entry point)."""
    register("openai", "hookstream_openai.chat:OpenAIChatProvider")
    register("openai-responses", "hookstream_openai.responses:OpenAIResponsesProvider")


@hookimpl
def hookstream_register_models(register: ModelRegistrar) -> None:
    """Register the capabilities of :data:`MODELS` under ``openai`` and ``openai-responses``."""
    from hookstream.plugin import ModelCapabilities

    for model, (vision, tools, reasoning, window) in MODELS.items():
        capabilities = ModelCapabilities(vision=vision, tools=tools, reasoning=reasoning, context_window=window)
        for provider in ("openai", "openai-responses"):
            register(f"{provider}:{model}", capabilities)
