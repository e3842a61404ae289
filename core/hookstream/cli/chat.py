"""``hookstream chat PROMPT --model PROVIDER:MODEL``: one run, rendered live."""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import click

from ..chat import chat
from ..errors import ToolDefinitionError
from ..messages import ToolCallPart
from ..tools import Tool, tool
from .live import LiveRenderer
from .render import OUTPUT_CHOICES, print_run


def _confirm(call: ToolCallPart) -> bool:
    """Ask on stderr/stdin whether ``call`` may run; no answer (EOF) denies."""
    args = json.dumps(call.arguments, ensure_ascii=False)[:200]
    try:
        return click.confirm(f"Run tool {call.name}({args})?", default=False, err=True)
    except click.Abort:
        return False


def load_tool(spec: str) -> Any:
    """The object named by ``MODULE:FUNC`` (the ``--tool`` option); raises :class:`click.BadParameter`,
    also for a function that cannot become a tool (a parameter annotation without JSON Schema)."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise click.BadParameter(f"expected MODULE:FUNC, got {spec!r}", param_hint="--tool")
    try:
        obj = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise click.BadParameter(f"cannot load {spec!r}: {exc}", param_hint="--tool") from None
    if callable(obj) and not isinstance(obj, Tool):
        try:
            tool(obj)
        except ToolDefinitionError as exc:
            raise click.BadParameter(exc.message, param_hint="--tool") from None
    return obj


@click.command("chat")
@click.argument("prompt")
@click.option("--model", required=True, help="PROVIDER:MODEL, e.g. openai:gpt-4o-mini.")
@click.option("--base-url", default=None, help="API root: http://host/v1 for OpenAI, http://host for Anthropic/Gemini.")
@click.option("--tool", "tool_specs", multiple=True, help="A tool as MODULE:FUNC (repeatable).")
@click.option("--system", default=None, help="System prompt.")
@click.option("--max-steps", type=int, default=10, show_default=True)
@click.option("--max-tokens", type=int, default=None)
@click.option("--output", type=click.Choice(OUTPUT_CHOICES), default="text", show_default=True)
@click.option("--approve", "ask_approval", is_flag=True,
              help="Ask y/N on the terminal before a tool that needs approval runs (always on with a terminal).")
@click.option("--strategy", default=None, help="Chunk strategy for --output text (immediate, word-boundary...).")
@click.option("--record", "record_dir", type=click.Path(file_okay=False), default=None,
              help="Record each model call (request without secrets, raw response) into DIR; "
                   "replay with --model replay:DIR.")
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
    ask_approval: bool,
) -> None:
    """Chat with MODEL; API keys come from the provider's environment variable (OPENAI_API_KEY...)."""
    tools = [load_tool(s) for s in tool_specs]
    # On a terminal, text output is the live renderer (Markdown, spinners, y/N approval prompts).
    live = LiveRenderer() if output == "text" and sys.stdout.isatty() else None
    approve = live.approve if live is not None else (_confirm if ask_approval else None)
    try:
        session = None
        if record_dir is not None:
            from ..record import Recorder

            session = Recorder(record_dir, model, base_url).session()
        stream = chat(model, prompt, tools=tools, system=system, max_steps=max_steps, base_url=base_url,
                      max_tokens=max_tokens, session=session, approve=approve)
    except (ValueError, LookupError, FileExistsError) as exc:
        raise click.UsageError(str(exc)) from None
    if live is not None:
        raise SystemExit(live.render(stream))
    raise SystemExit(print_run(stream, output, strategy))
