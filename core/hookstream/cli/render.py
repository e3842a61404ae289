"""How the CLI prints a run: live text, AG-UI JSON lines, or the final-json object."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable

import click

from ..accumulate import StepResult
from ..chat import ChatStream
from ..events import BaseEvent, RunError, TextMessageContent, ToolCallResult, ToolCallStart, to_json
from ..output import final_json

OUTPUT_CHOICES = ("text", "events", "final-json")


def print_call(events: Iterable[BaseEvent], step: StepResult, output: str) -> None:
    """Print already-collected events of one call in ``output`` form."""
    if output == "final-json":
        click.echo(json.dumps(final_json(step), ensure_ascii=False))
    elif output == "events":
        for ev in events:
            click.echo(to_json(ev))
    else:
        render_text(events)


def render_text(events: Iterable[BaseEvent]) -> None:
    """Write text deltas as they come, tool calls and results on their own lines, errors to stderr."""
    out = sys.stdout
    at_line_start = True
    for ev in events:
        if isinstance(ev, TextMessageContent):
            out.write(ev.delta)
            out.flush()
            at_line_start = ev.delta.endswith("\n")
        elif isinstance(ev, ToolCallStart):
            out.write(("" if at_line_start else "\n") + f"[tool call] {ev.tool_call_name} ({ev.tool_call_id})\n")
            at_line_start = True
        elif isinstance(ev, ToolCallResult):
            state = "error" if ev.error else "result"
            out.write(f"[tool {state}] {ev.tool_call_id}: {ev.content[:200]}\n")
            at_line_start = True
        elif isinstance(ev, RunError):
            if not at_line_start:
                out.write("\n")
            out.flush()
            click.echo(f"error ({ev.code}): {ev.message}", err=True)
            at_line_start = True
    if not at_line_start:
        out.write("\n")
    out.flush()


def print_run(stream: ChatStream, output: str) -> int:
    """Consume ``stream`` printing it in ``output`` form; return the exit code (1 when the run failed).

    ``final-json`` describes the run's last model call (see :func:`hookstream.output.final_json`).
    """
    if output == "events":
        for ev in stream:
            click.echo(to_json(ev))
    elif output == "text":
        render_text(stream)
    else:
        for _ in stream:
            pass
    result = stream.result()
    if output == "final-json":
        step = result.last_step or StepResult()
        click.echo(json.dumps(final_json(step), ensure_ascii=False))
    return 1 if result.outcome == "error" else 0
