"""``hookstream models [PROVIDER] [--json]``: the model catalogue (:func:`hookstream.models`), chat models
only; ``hookstream models default [MODEL]`` shows or sets the default model (:mod:`.defaults`).

Text output is one line per model::

    openai:gpt-4o-mini  vision tools  128k ctx  $0.15 in / $0.6 out per 1M tokens

``--json`` prints one JSON document: ``{"price_source": ..., "models": [ModelInfo.to_json(), ...]}``.
"""

from __future__ import annotations

import json
import os
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


class _ListByDefault(click.Group):
    """``hookstream models [PROVIDER]`` is ``hookstream models list [PROVIDER]``: a first argument that is
    not a subcommand (a provider name, ``--json``) goes to ``list``, as simonw/llm's ``llm models``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("-h", "--help")):
            args = ["list", *args]
        return super().parse_args(ctx, args)


@click.group("models", cls=_ListByDefault)
def command() -> None:
    """The model catalogue (hookstream models [PROVIDER]) and the default model (hookstream models default)."""


@command.command("list")
@click.argument("provider", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document instead of text.")
def list_command(provider: str | None, as_json: bool) -> None:
    """List the chat models each installed provider serves (of PROVIDER only, when given), with
    capabilities and prices.

    Capabilities come from the provider plugins, prices (and context windows they list) from
    genai-prices, installed with hookstream[prices]; without it models are listed unpriced. A provider
    with no known models (a local server's: ollama) gets a note on stderr, and the command exits 0."""
    found = models(provider)
    if as_json:
        click.echo(json.dumps({"price_source": price_source(), "models": [m.to_json() for m in found]}, indent=1))
    else:
        for m in found:
            click.echo(line(m))
    if provider is not None and not found:
        click.echo(_none_known(provider), err=True)
    if not prices_available():
        from .._install_hint import install_command

        click.echo(f"note: prices need genai-prices: {install_command('hookstream[prices]')}", err=True)


def _none_known(provider: str) -> str:
    from .._errors import UnknownPluginError
    from .._registry import get_registry

    try:
        hint = get_registry().provider(provider).models_hint
    except UnknownPluginError:
        hint = ""
    if hint:
        return f"no models known for {provider}; list yours with `{hint}` and use one as {provider}:NAME"
    return f"no models known for {provider}; any model name it serves works as {provider}:NAME"


@command.command("default")
@click.argument("model", required=False)
def default_command(model: str | None) -> None:
    """Show the default model, or make MODEL (PROVIDER:MODEL or an alias) the default that hookstream chat
    uses without -m/--model. $HOOKSTREAM_MODEL, when set, wins over the stored one."""
    from .defaults import MODEL_ENV, default_model, set_default_model

    if model is None:
        current, source = default_model()
        if current is None:
            raise click.ClickException("no default model: hookstream models default PROVIDER:MODEL sets one")
        click.echo(current)
        if source.startswith("$"):
            click.echo(f"(from {source})", err=True)
        return
    set_default_model(model)
    click.echo(f"default model: {model}", err=True)
    if os.environ.get(MODEL_ENV):
        click.echo(f"note: ${MODEL_ENV} is set and wins over it in this shell", err=True)
