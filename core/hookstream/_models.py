"""The model catalogue: :func:`models` lists the models hookstream knows, with capabilities and prices.

Two sources, merged per ``"PROVIDER:MODEL"``:

* provider plugins, through ``hookstream_register_models`` (``register("openai:gpt-4o-mini",
  ModelCapabilities(vision=True, tools=True, ...))``): what a model can do;
* genai-prices (``hookstream[prices]``, :mod:`hookstream._prices`): every chat model its bundled data
  lists for the provider's price id that the provider serves (:func:`hookstream._prices.catalogue`: no
  embedding, speech, image or retired models, no price patterns, Claude under ``vertex-anthropic`` only),
  with list prices and, where it has one, the context window.

A plugin's model that genai-prices knows under another id (``claude-sonnet-4-20250514`` is
``claude-4-sonnet`` there) is listed once, under the plugin's name, with those prices.

Thread safety: reads the registry and the price data only; a list is built per call.
"""

from __future__ import annotations

from ._prices import PRICE_PROVIDERS, ModelCapabilities, ModelInfo, PriceInfo, catalogue, price_info
from ._registry import get_registry

__all__ = ["models"]


def _info(provider: str, model: str, prices: PriceInfo | None, context_window: int | None,
          capabilities: ModelCapabilities | None) -> ModelInfo:
    caps = capabilities or ModelCapabilities()
    p = prices or PriceInfo()
    source = "+".join(s for s, on in (("plugin", capabilities is not None), ("prices", prices is not None)) if on)
    return ModelInfo(provider, model, caps.vision, caps.tools, caps.reasoning,
                     caps.context_window if caps.context_window is not None else context_window, caps.description,
                     p.input, p.output, p.cached_input, p.cache_write, p.currency, p.source, source)


def models(provider: str | None = None) -> list[ModelInfo]:
    """The known models of ``provider`` (a registered provider name such as ``"openai"``), or of every
    installed provider, sorted by provider and model: what provider plugins registered
    (``hookstream_register_models``: vision, tools, reasoning, context window) merged with the chat
    models genai-prices lists for the provider (prices per million tokens, context window); see
    ``docs/models-and-cost.md``, "The model catalogue". A provider with none known gives ``[]``. Without
    ``hookstream[prices]`` only the plugins' models are listed, unpriced.

    Raises :class:`~hookstream.errors.UnknownPluginError` for a provider no plugin registers and genai-prices
    has no price id for.
    """
    reg = get_registry()
    registered = reg.models()
    if provider is None:
        names = sorted({*reg.names("providers"), *(key.partition(":")[0] for key in registered)})
    else:
        if provider not in reg.names("providers") and provider not in PRICE_PROVIDERS and not any(
                key.partition(":")[0] == provider for key in registered):
            reg.provider(provider)  # raises UnknownPluginError with what to install
        names = [provider]
    out: list[ModelInfo] = []
    for name in names:
        entries: dict[str, ModelInfo] = {model: _info(name, model, prices, window, None)
                                         for model, prices, window in catalogue(name)}
        for key, caps in registered.items():
            pname, _, model = key.partition(":")
            if pname != name or not model:
                continue
            found = price_info(name, model)
            if found is None:
                entries[model] = _info(name, model, None, None, caps)
                continue
            price_id, prices, window = found
            if price_id != model and price_id in entries and entries[price_id].source == "prices":
                del entries[price_id]  # listed under the plugin's name instead
            entries[model] = _info(name, model, prices, window, caps)
        out.extend(entries[m] for m in sorted(entries))
    return out

