"""Prices of model calls, from the ``genai-prices`` package (pydantic's; ``pip install 'hookstream[prices]'``).

hookstream keeps no price table of its own. genai-prices ships a snapshot of its price data inside each
release (``genai_prices/data.py``, updated with every release on PyPI), and that bundled snapshot is
all hookstream reads: nothing is fetched at run time. genai-prices can also refresh its data from its
GitHub repository (``genai_prices.UpdatePrices``, opt-in); a program that starts it gets the refreshed
prices here too, and :func:`price_source` says so. Without the package every cost is ``None``.

* :func:`cost_of` prices one model call from hookstream's provider name, the model name and the
  :class:`~hookstream.events.Usage` counts (input, cached input, cache writes, output, reasoning);
  :func:`priced` returns the usage with that ``cost`` set (the engine calls it once per step).
* :data:`PRICE_PROVIDERS` maps hookstream provider names to genai-prices provider ids; a name it does
  not list (``ollama``, ``replay``, ``agui``, a plugin's) has no price.
* :class:`ModelCapabilities` is what a provider plugin registers for a model
  (``hookstream_register_models``); :class:`ModelInfo` is one entry of :func:`hookstream.models`;
  :func:`catalogue` lists the chat models genai-prices knows a provider serves
  (:func:`is_chat_model`: genai-prices has no "mode" field, so the kind of model is read from how it
  is priced, and from its name where prices cannot tell).

Thread safety: genai-prices' snapshot is read-only here (its lookups keep caches of their own, filled
idempotently), as is the set of names it has no price for (a set's ``add`` is atomic; a name two
threads look up at once is added twice, harmlessly); everything else is a pure function or a frozen value.
"""

from __future__ import annotations

import datetime
import functools
import importlib.metadata
import logging
import re
from collections.abc import Iterator
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import attrs

from ._capabilities import ModelCapabilities

if TYPE_CHECKING:
    from ._events import Cost, Usage

__all__ = ["PRICE_PROVIDERS", "PUBLISHERS", "ModelCapabilities", "ModelInfo", "PriceInfo", "catalogue", "cost_of",
           "is_chat_model", "price_info", "price_source", "priced", "prices_available"]

log = logging.getLogger("hookstream.prices")

PRICE_PROVIDERS: dict[str, str | None] = {
    "openai": "openai",
    "openai-responses": "openai",
    "azure": "azure",  # genai-prices falls back to OpenAI's (and others') models for Azure
    "azure-responses": "azure",
    "anthropic": "anthropic",
    "vertex-anthropic": "google",  # Claude on Vertex: google's entry falls back to Anthropic's models
    "gemini": "google",
    "vertex": "google",
    "bedrock": "aws",
    "ollama": None,  # a local (or self-hosted) model: no list price, so no cost rather than a guess of 0
}
"""hookstream provider name -> genai-prices provider id (``None``: never priced)."""

REASONING_APART = frozenset({"gemini", "vertex"})
"""Providers whose ``output_tokens`` leave the reasoning tokens out (see :class:`~hookstream.events.Usage`):
those are billed as output on top."""


@functools.cache
def _version() -> str | None:
    try:
        return importlib.metadata.version("genai-prices")
    except importlib.metadata.PackageNotFoundError:
        return None


def prices_available() -> bool:
    """Whether genai-prices is installed (``hookstream[prices]``)."""
    return _version() is not None


def _describe(updated: datetime.datetime | None) -> str:
    when = "bundled data" if updated is None else f"data updated {updated.isoformat(timespec='minutes')}"
    return f"genai-prices {_version()} ({when})"


def price_source() -> str | None:
    """Where prices come from: ``"genai-prices 0.2.3 (bundled data)"``, or ``"genai-prices 0.2.3 (data
    updated 2026-01-02T03:04)"`` when the program refreshed genai-prices' data (``UpdatePrices``);
    ``None`` without the package."""
    if _version() is None:
        return None
    from genai_prices import data_snapshot

    snapshot = data_snapshot.get_snapshot()
    return _describe(snapshot.timestamp if snapshot.from_auto_update else None)


# genai-prices caches the models it finds, not the ones it does not: an unknown name (a local model, a
# deployment name) was matched against every model of its provider again at every step.
_UNPRICED: set[tuple[str, str]] = set()
_UNPRICED_MAX = 10_000


def cost_of(usage: Usage, provider: str, *models: str | None) -> Cost | None:
    """What ``usage`` cost on ``provider`` (hookstream's name: ``"openai"``, ``"bedrock"``...) for the
    first of ``models`` the price data knows (give the model version the provider answered with
    first, then the one asked for: an Azure deployment name means nothing to a price list). ``None``
    when the provider or model has no price, the usage has no token counts, or genai-prices is not
    installed."""
    price_id = PRICE_PROVIDERS.get(provider)
    if price_id is None or (usage.input_tokens is None and usage.output_tokens is None):
        return None
    try:
        from genai_prices import Usage as PriceUsage
        from genai_prices import data_snapshot
    except ImportError:
        return None
    output = usage.output_tokens or 0
    if provider in REASONING_APART and usage.reasoning_tokens:
        output += usage.reasoning_tokens
    counts: dict[str, int] = {"input_tokens": usage.input_tokens or 0, "output_tokens": output}
    if usage.cached_input_tokens:
        counts["cache_read_tokens"] = usage.cached_input_tokens
    if usage.cache_write_tokens:
        counts["cache_write_tokens"] = usage.cache_write_tokens
    snapshot = data_snapshot.get_snapshot()
    for model in dict.fromkeys(m for m in models if m):
        if (price_id, model) in _UNPRICED:
            continue
        try:
            calc = snapshot.calc(PriceUsage(**counts), model, price_id, None, None)
        except LookupError:
            if len(_UNPRICED) < _UNPRICED_MAX:
                _UNPRICED.add((price_id, model))
            continue
        except Exception as exc:  # inconsistent counts (cache above input) or a price-data problem: no cost
            log.warning("no price for %s:%s: %s: %s", provider, model, type(exc).__name__, exc)
            return None
        from ._events import Cost  # here: a plugin registering ModelCapabilities does not load the events

        return Cost(calc.total_price, "USD", _describe(calc.auto_update_timestamp))
    return None


def priced(usage: Usage | None, provider: str, *models: str | None) -> Usage | None:
    """``usage`` with its ``cost`` set from :func:`cost_of` (unchanged when it has one or is ``None``)."""
    if usage is None or usage.cost is not None:
        return usage
    cost = cost_of(usage, provider, *models)
    return usage if cost is None else attrs.evolve(usage, cost=cost)


@attrs.frozen
class PriceInfo:
    """List prices of one model, in ``currency`` per million tokens (``None``: not priced)."""

    input: Decimal | None = None
    output: Decimal | None = None
    cached_input: Decimal | None = None
    cache_write: Decimal | None = None
    currency: str = "USD"
    source: str | None = None


@attrs.frozen
class ModelInfo:
    """One model of the catalogue (:func:`hookstream.models`): ``provider`` and ``model`` as in
    ``"PROVIDER:MODEL"`` (:attr:`name`), capabilities (``None``: not known) and list prices in
    ``currency`` per million tokens (``None``: not priced). ``source`` says where the entry came from:
    ``"plugin"`` (a provider plugin's ``hookstream_register_models``), ``"prices"`` (genai-prices only)
    or both (``"plugin+prices"``)."""

    provider: str
    model: str
    vision: bool | None = None
    tools: bool | None = None
    reasoning: bool | None = None
    context_window: int | None = None
    description: str | None = None
    input_price: Decimal | None = None
    output_price: Decimal | None = None
    cached_input_price: Decimal | None = None
    cache_write_price: Decimal | None = None
    currency: str = "USD"
    price_source: str | None = None
    source: str = "prices"

    @property
    def name(self) -> str:
        """``"PROVIDER:MODEL"``, what :func:`hookstream.chat` takes."""
        return f"{self.provider}:{self.model}"

    def to_json(self) -> dict[str, Any]:
        """The JSON form ``hookstream models --json`` prints (prices as numbers, ``null`` when unknown)."""

        def num(d: Decimal | None) -> float | None:
            return None if d is None else float(d)

        return {"name": self.name, "provider": self.provider, "model": self.model, "vision": self.vision,
                "tools": self.tools, "reasoning": self.reasoning, "context_window": self.context_window,
                "description": self.description,
                "prices": {"input": num(self.input_price), "output": num(self.output_price),
                           "cached_input": num(self.cached_input_price), "cache_write": num(self.cache_write_price),
                           "currency": self.currency, "per": "1M tokens", "source": self.price_source},
                "source": self.source}


def _per_million(value: Any) -> Decimal | None:
    # A price is a Decimal per million tokens, or tiers by prompt size: the base (first) tier.
    if value is None:
        return None
    if isinstance(value, Decimal):
        return value
    base = getattr(value, "base", None)
    return base if isinstance(base, Decimal) else None


def _raw_prices(model: Any) -> Any:
    try:
        return model.get_prices(datetime.datetime.now(tz=datetime.UTC))
    except Exception:  # a model with no price in effect now
        return None


def _prices_of(model: Any, source: str | None, prices: Any = None) -> PriceInfo:
    prices = prices if prices is not None else _raw_prices(model)
    if prices is None:
        return PriceInfo(source=source)
    return PriceInfo(input=_per_million(getattr(prices, "input_mtok", None)),
                     output=_per_million(getattr(prices, "output_mtok", None)),
                     cached_input=_per_million(getattr(prices, "cache_read_mtok", None)),
                     cache_write=_per_million(getattr(prices, "cache_write_mtok", None)), source=source)


def price_info(provider: str, model: str) -> tuple[str, PriceInfo, int | None] | None:
    """The genai-prices model id ``model`` matches on ``provider``, its list prices and context window
    (``None``: not known)."""
    price_id = PRICE_PROVIDERS.get(provider)
    if price_id is None:
        return None
    try:
        from genai_prices import data_snapshot
    except ImportError:
        return None
    try:
        _, found = data_snapshot.get_snapshot().find_provider_model(model, None, price_id, None)
    except LookupError:
        return None
    return found.id, _prices_of(found, price_source()), found.context_window


PUBLISHERS: dict[str, str] = {"gemini": "google", "vertex": "google", "vertex-anthropic": "anthropic"}
"""hookstream provider name -> the one publisher whose models it serves from its price entry. Google's
entry also prices Claude on Vertex AI; those models answer only at the ``anthropic`` publisher's URL
(``vertex-anthropic:``), a ``vertex:claude-...`` call gets HTTP 404 (``docs/providers/vertex.md``)."""

# Priced in a medium a chat stream does not carry: speech, image or video out (text-to-speech, image
# and video generation, the realtime and live audio models), images or video in at their own rate
# (image-editing models; a chat model bills an image as input tokens).
_OTHER_MEDIA = ("output_audio_mtok", "output_image_mtok", "output_video_mtok", "input_image_mtok", "input_video_mtok")
# What the price data cannot tell from prices: speech and transcription models priced per token, image
# models priced like text, and the legacy completion-only models (no chat endpoint).
_NOT_CHAT = re.compile(r"(^|[-.])(tts|transcribe|image)([-.]|$)|^(ada|babbage|curie|davinci|text-davinci)\b|"
                       r"^gpt-3\.5-turbo-instruct$")
# Price-matching patterns, not model ids: a fine-tune family (ft:gpt-4o), a prefix (ft:gpt-3.5-turbo-,
# gpt-4o-mini-2024-07-18.ft-), a router's variant (gpt-4o:extended; a colon is kept only before a version
# number, as Bedrock's -v1:0), and Bedrock's stand-in for the us./eu./jp. inference-profile prefixes.
_MALFORMED = re.compile(r"[-.:]$|:(?!\d+$)|^regional\.")


def is_chat_model(model_id: str, deprecated: bool | None, prices: Any) -> bool:
    """Whether a genai-prices model entry is a chat model someone can call today: not ``deprecated``,
    priced per input and output token (an embedding model has no output price, a speech model is priced
    per character or per hour, a moderation model has no price), in no other medium (:data:`_OTHER_MEDIA`),
    not one of the kinds its name tells (:data:`_NOT_CHAT`) and a real model id (:data:`_MALFORMED`)."""
    if deprecated or prices is None:
        return False
    if getattr(prices, "input_mtok", None) is None or getattr(prices, "output_mtok", None) is None:
        return False
    if any(getattr(prices, field, None) is not None for field in _OTHER_MEDIA):
        return False
    return not (_NOT_CHAT.search(model_id) or _MALFORMED.search(model_id))


def _publisher(snapshot: Any, entry: Any, model_id: str) -> str:
    # A provider entry lists other publishers' models too (its fallback_model_providers): the model is
    # theirs when their own model_match claims its id.
    for other in entry.fallback_model_providers or ():
        found = next((p for p in snapshot.providers if p.id == other), None)
        if found is not None and found.model_match is not None and found.model_match.is_match(model_id):
            return str(other)
    return str(entry.id)


def catalogue(provider: str) -> Iterator[tuple[str, PriceInfo, int | None]]:
    """``(model id, prices, context window)`` of every chat model genai-prices lists under ``provider``'s
    price id that the provider serves (:func:`is_chat_model`; of the publisher in :data:`PUBLISHERS`,
    when it names one); none without the package or a price id."""
    price_id = PRICE_PROVIDERS.get(provider)
    if price_id is None:
        return
    try:
        from genai_prices import data_snapshot
    except ImportError:
        return
    snapshot = data_snapshot.get_snapshot()
    source = price_source()
    publisher = PUBLISHERS.get(provider)
    for entry in snapshot.providers:
        if entry.id == price_id:
            for model in entry.models:
                raw = _raw_prices(model)
                if not is_chat_model(model.id, model.deprecated, raw):
                    continue
                if publisher is not None and _publisher(snapshot, entry, model.id) != publisher:
                    continue
                yield model.id, _prices_of(model, source, raw), model.context_window
