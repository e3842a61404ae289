"""``hookstream models [PROVIDER] [--json]``: the model catalogue (:func:`hookstream.models`).

Text output is one line per model::

    openai:gpt-4o-mini  vision tools  128k ctx  $0.15 in / $0.6 out per 1M tokens

``--json`` prints one JSON document: ``{"price_source": ..., "models": [ModelInfo.to_json(), ...]}``.
"""

from __future__ import annotations

import json
from decimal import Decimal

import click

from .._models import models
from .._prices import ModelInfo, price_source, prices_available


def _price(value: Decimal | None) -> str:
    return "?" if value is None else f"${value:f}"


def _window(tokens: int | None) -> str:
    if tokens is None:
        return ""
    return f"{tokens // 1000}k ctx" if tokens % 1000 == 0 or tokens < 1_000_000 else f"{tokens / 1e6:.2f}M ctx"


def line(m: ModelInfo) -> str:
    """One model as ``hookstream models`` prints it."""
    caps = " ".join(name for name, on in (("vision", m.vision), ("tools", m.tools), ("reasoning", m.reasoning)) if on)
    parts = [m.name, caps, _window(m.context_window)]
    if m.input_price is not None or m.output_price is not None:
        unit = "" if m.currency == "USD" else f" {m.currency}"
        parts.append(f"{_price(m.input_price)} in / {_price(m.output_price)} out per 1M tokens{unit}")
    return "  ".join(p for p in parts if p)


@click.command("models")
@click.argument("provider", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of text.")
def command(provider: str | None, as_json: bool) -> None:
    """List known models (of PROVIDER, or of every installed provider) with capabilities and prices.

    Capabilities come from the provider plugins, prices (and context windows they list) from
    genai-prices, installed with hookstream[prices]; without it models are listed unpriced."""
    found = models(provider)
    if as_json:
        click.echo(json.dumps({"price_source": price_source(), "models": [m.to_json() for m in found]}, indent=1))
        return
    for m in found:
        click.echo(line(m))
    if not prices_available():
        from .._install_hint import install_command

        click.echo(f"note: prices need genai-prices: {install_command('hookstream[prices]')}", err=True)
