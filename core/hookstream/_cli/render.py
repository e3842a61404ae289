"""How the CLI prints a run: live text, AG-UI JSON lines, or the final-json object."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TextIO

import click

from .._agentloop.output import final_json, interrupts_json
from .._custom import FilePayload, MessageAddedPayload, SourcePayload, ToolCallRepairedPayload, parse_custom
from .._errors import HookstreamError
from .._events import BaseEvent, Custom, RunError, TextMessageStart, ToolCallResult, ToolCallStart, to_json
from .._processing.processor import StreamProcessor
from .._stream.accumulate import StepResult
from . import error_line

if TYPE_CHECKING:  # the engine is imported by the commands that run one (chat), not by replay
    from .._chat import ChatStream

OUTPUT_CHOICES = ("text", "events", "final-json")
EXIT_WAITING = 3  # the run ended waiting for a tool call's approval (or a client tool's output)


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
    renderer = _TextRenderer(sys.stdout)
    processor = StreamProcessor(strategy=strategy, on_text_update=renderer.on_text_update)
    for ev in events:
        processor.process_chunk(ev)
        handler = _RENDER_HANDLERS.get(type(ev))
        if handler is not None:
            handler(renderer, ev)
    processor.finalize()
    renderer.finish()


class _TextRenderer:
    """What :func:`render_text` has written so far: one method per event class it prints a line for."""

    __slots__ = ("after", "line_start", "out", "printed")

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.printed = 0  # characters of the current text part written
        self.line_start = True
        self.after: list[SourcePayload | FilePayload] = []  # listed after the answer

    def write(self, text: str) -> None:
        if text:
            self.out.write(text)
            self.out.flush()
            self.line_start = text.endswith("\n")

    def on_text_update(self, message_id: str, text: str) -> None:
        # The processor hands the full text of the current text part; print only what is new.
        self.write(text[self.printed:])
        self.printed = len(text)

    def line(self, text: str) -> None:
        self.write(("" if self.line_start else "\n") + text + "\n")

    def text_message_start(self, ev: TextMessageStart) -> None:
        self.printed = 0  # a new text part starts from its own beginning

    def tool_call_start(self, ev: ToolCallStart) -> None:
        self.line(f"[tool call] {ev.tool_call_name} ({ev.tool_call_id})")

    def custom(self, ev: Custom) -> None:
        payload = parse_custom(ev)
        if isinstance(payload, ToolCallRepairedPayload):
            self.line(f"[tool call repaired] {payload.tool_name} ({payload.tool_call_id})")
        elif isinstance(payload, SourcePayload | FilePayload):
            self.after.append(payload)  # listed after the answer, so the streamed text stays whole
        elif isinstance(payload, MessageAddedPayload):
            self.line(f"[message sent] {payload.content[:200]}")  # a --live line joined the run here

    def tool_call_result(self, ev: ToolCallResult) -> None:
        self.line(f"[tool {'error' if ev.error else 'result'}] {ev.tool_call_id}: {ev.content[:200]}")

    def run_error(self, ev: RunError) -> None:
        if not self.line_start:
            self.write("\n")
        click.echo(error_line(ev.code, ev.message), err=True)

    def finish(self) -> None:
        """End the last line; list the sources and files."""
        if not self.line_start:
            self.write("\n")
        for payload in self.after:
            if isinstance(payload, SourcePayload):
                src = payload.part
                self.line(" ".join(["[source]", *(x for x in (src.title, src.url) if x)]))
            else:
                f = payload.part
                self.line(f"[file] {f.media_type} " + (f.url or f"{len(f.data or b'')} bytes"))


_RENDER_HANDLERS: dict[type[BaseEvent], Callable[[_TextRenderer, Any], None]] = {
    TextMessageStart: _TextRenderer.text_message_start,
    ToolCallStart: _TextRenderer.tool_call_start,
    Custom: _TextRenderer.custom,
    ToolCallResult: _TextRenderer.tool_call_result,
    RunError: _TextRenderer.run_error,
}


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
        doc = final_json(step, result.sources, result.output, run_error, result.usage, outcome=result.outcome,
                         interrupts=interrupts_json(result.pending_approvals, result.pending_tool_calls))
        click.echo(json.dumps(doc, ensure_ascii=False))
    return 1 if result.outcome == "error" else 0


def report_waiting(stream: ChatStream) -> int:
    """For a run that ended with outcome ``interrupt``: one line on stderr per tool call it waits for
    (``waiting for approval of NAME(ARGUMENTS) [id ID]``), then how to answer; returns
    :data:`EXIT_WAITING`. Nothing answered the approval because stdin is no terminal and ``--approve``
    was not given (or a remote ``agui:`` agent asked for one)."""
    result = stream.result()
    for item in interrupts_json(result.pending_approvals, result.pending_tool_calls):
        args = json.dumps(item["arguments"], ensure_ascii=False)
        args = args if len(args) <= 200 else args[:197] + "..."
        what = "approval of" if item["kind"] == "approval" else "the client's output of"
        click.echo(f"waiting for {what} {item['name']}({args}) [id {item['id']}]", err=True)
    click.echo("the run stopped there: resume with --approve to answer y/N (on stdin when it is not a terminal), "
               f"exit code {EXIT_WAITING}", err=True)
    return EXIT_WAITING
