"""How the CLI prints a run: live text, AG-UI JSON lines, or the final-json object."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import click

from .._agentloop.output import final_json
from .._custom import FilePayload, SourcePayload, ToolCallRepairedPayload, parse_custom
from .._errors import HookstreamError
from .._events import BaseEvent, Custom, RunError, TextMessageStart, ToolCallResult, ToolCallStart, to_json
from .._processing.processor import StreamProcessor
from .._stream.accumulate import StepResult

if TYPE_CHECKING:  # the engine is imported by the commands that run one (chat), not by replay
    from .._chat import ChatStream

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


def render_text(events: Iterable[BaseEvent], strategy: Any = None) -> None:
    """Render a run as plain text, live: events go through a :class:`StreamProcessor`, whose chunk
    strategy decides when text is written; tool calls and results get their own lines; sources and
    generated files are listed after the answer (``[source] TITLE URL``, ``[file] TYPE SIZE``); errors
    go to stderr."""
    out = sys.stdout
    state = {"printed": 0, "line_start": True}

    def write(text: str) -> None:
        if text:
            out.write(text)
            out.flush()
            state["line_start"] = text.endswith("\n")

    def on_text_update(message_id: str, text: str) -> None:
        # The processor hands the full text of the current text part; print only what is new.
        write(text[state["printed"]:])
        state["printed"] = len(text)

    def line(text: str) -> None:
        write(("" if state["line_start"] else "\n") + text + "\n")

    processor = StreamProcessor(strategy=strategy, on_text_update=on_text_update)
    after: list[SourcePayload | FilePayload] = []
    for ev in events:
        processor.process_chunk(ev)
        if isinstance(ev, TextMessageStart):
            state["printed"] = 0  # a new text part starts from its own beginning
        elif isinstance(ev, ToolCallStart):
            line(f"[tool call] {ev.tool_call_name} ({ev.tool_call_id})")
        elif isinstance(ev, Custom):
            payload = parse_custom(ev)
            if isinstance(payload, ToolCallRepairedPayload):
                line(f"[tool call repaired] {payload.tool_name} ({payload.tool_call_id})")
            elif isinstance(payload, SourcePayload | FilePayload):
                after.append(payload)  # listed after the answer, so the streamed text stays whole
        elif isinstance(ev, ToolCallResult):
            line(f"[tool {'error' if ev.error else 'result'}] {ev.tool_call_id}: {ev.content[:200]}")
        elif isinstance(ev, RunError):
            if not state["line_start"]:
                write("\n")
            click.echo(f"error ({ev.code}): {ev.message}", err=True)
    processor.finalize()
    if not state["line_start"]:
        write("\n")
    for payload in after:
        if isinstance(payload, SourcePayload):
            src = payload.part
            line(" ".join(["[source]", *(x for x in (src.title, src.url) if x)]))
        else:
            f = payload.part
            line(f"[file] {f.media_type} " + (f.url or f"{len(f.data or b'')} bytes"))


def print_run(stream: ChatStream, output: str, strategy: Any = None) -> int:
    """Consume ``stream`` printing it in ``output`` form; return the exit code (1 when the run failed).

    ``final-json`` describes the run's last model call (see :func:`hookstream.final_json`), with the
    sources of every step and the cost of the whole run.
    """
    if output == "events":
        for ev in stream:
            click.echo(to_json(ev))
    elif output == "text":
        render_text(stream, strategy)
    else:
        for _ in stream:
            pass
    result = stream.result()
    if output == "final-json":
        step = result.last_step or StepResult()
        err = result.error
        run_error = (err.code, err.message) if isinstance(err, HookstreamError) else None
        doc = final_json(step, result.sources, result.output, run_error, result.usage)
        click.echo(json.dumps(doc, ensure_ascii=False))
    return 1 if result.outcome == "error" else 0
