"""``hookstream chat PROMPT --model PROVIDER:MODEL``: one run, rendered live."""

from __future__ import annotations

import importlib
from typing import Any

import click

from ..chat import chat
from .render import OUTPUT_CHOICES, print_run


def _load_tool(spec: str) -> Any:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise click.BadParameter(f"expected MODULE:FUNC, got {spec!r}", param_hint="--tool")
    try:
        return getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise click.BadParameter(f"cannot load {spec!r}: {exc}", param_hint="--tool") from None


@click.command("chat")
@click.argument("prompt")
@click.option("--model", required=True, help="PROVIDER:MODEL, e.g. openai:gpt-4o-mini.")
@click.option("--base-url", default=None, help="API root: http://host/v1 for OpenAI, http://host for Anthropic/Gemini.")
@click.option("--tool", "tool_specs", multiple=True, help="A tool as MODULE:FUNC (repeatable).")
@click.option("--system", default=None, help="System prompt.")
@click.option("--max-steps", type=int, default=10, show_default=True)
@click.option("--max-tokens", type=int, default=None)
@click.option("--output", type=click.Choice(OUTPUT_CHOICES), default="text", show_default=True)
@click.option("--strategy", default=None, help="Chunk strategy for --output text (immediate, word-boundary...).")
# issue 7 (recordings): --record DIR saves each model call's request and raw response for `replay:DIR`.
@click.option("--record", "record_dir", type=click.Path(file_okay=False), default=None,
              help="Record each model call (request without secrets, raw response) into DIR; replay with --model replay:DIR.")
def command(
    prompt: str,
    model: str,
    base_url: str | None,
    tool_specs: tuple[str, ...],
    system: str | None,
    max_steps: int,
    max_tokens: int | None,
    output: str,
    strategy: str | None,
    record_dir: str | None,
) -> None:
    """Chat with MODEL; API keys come from the provider's environment variable (OPENAI_API_KEY...)."""
    tools = [_load_tool(s) for s in tool_specs]
    try:
        session = None
        if record_dir is not None:  # issue 7 (recordings)
            from ..record import Recorder

            session = Recorder(record_dir, model, base_url).session()
        stream = chat(model, prompt, tools=tools, system=system, max_steps=max_steps, base_url=base_url,
                      max_tokens=max_tokens, session=session)
    except (ValueError, LookupError, FileExistsError) as exc:
        raise click.UsageError(str(exc)) from None
    raise SystemExit(print_run(stream, output, strategy))
