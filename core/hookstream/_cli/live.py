"""Live terminal rendering of a run with rich: Markdown as it streams, tool calls with a spinner while
they run and their results when done, and a y/n prompt for tools that need approval.

Cost stays linear in the answer's length: finished Markdown blocks (up to a blank line outside a code
fence) are printed once and leave the live area, and the live tail is re-parsed only on rich's refresh
ticks (10 per second), never per delta. When stdout is not a terminal, plain text is written instead
(deltas as they come, one line per tool call and result).

Usage (the CLI does this for ``--output text`` on a terminal)::

    renderer = LiveRenderer()
    stream = chat(model, prompt, tools=tools, approve=renderer.approve)
    exit_code = renderer.render(stream)

Thread safety: :meth:`LiveRenderer.approve` may be called from tool-executor threads while
:meth:`LiveRenderer.render` runs; prompts are serialised under a lock.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterable
from typing import IO, Any, TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.prompt import Confirm
from rich.spinner import Spinner
from rich.text import Text

from .._custom import ApprovalRequestedPayload, MessageAddedPayload, ToolCallRepairedPayload, parse_custom
from .._events import (
    BaseEvent,
    Custom,
    RunError,
    RunFinished,
    TextMessageContent,
    TextMessageEnd,
    ToolCallArgs,
    ToolCallResult,
    ToolCallStart,
)
from .._messages import ToolCallPart
from . import error_line

__all__ = ["LiveRenderer", "render_live"]

_PREVIEW = 300


def _preview(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


class _MarkdownTail:
    """The not-yet-final part of the answer; :meth:`take_done` splits off finished blocks."""

    def __init__(self) -> None:
        self.text = ""
        self._fences = 0  # ``` seen in text already committed (parity says whether we are in a fence)

    def add(self, delta: str) -> None:
        self.text += delta

    def take_done(self) -> str:
        """Finished blocks (ending at the last blank line outside a code fence), removed from the tail."""
        cut = self.text.rfind("\n\n")
        while cut > 0:
            head = self.text[:cut]
            if (self._fences + head.count("```")) % 2 == 0:
                self._fences += head.count("```")
                self.text = self.text[cut + 2 :]
                return head
            cut = self.text.rfind("\n\n", 0, cut)
        return ""

    def take_all(self) -> str:
        text, self.text, self._fences = self.text, "", 0
        return text

    def __rich__(self) -> RenderableType:
        return Markdown(self.text) if self.text else Text("")


class LiveRenderer:
    """Renders one run on ``console`` (default: stdout). ``plain=None`` picks plain text when the
    console is not a terminal."""

    def __init__(self, console: Console | None = None, *, plain: bool | None = None,
                 stdin: TextIO | None = None) -> None:
        self.console = console or Console()
        self.plain = (not self.console.is_terminal) if plain is None else plain
        self._stdin = stdin
        self._tail = _MarkdownTail()
        self._running: dict[str, tuple[str, str]] = {}  # tool call id -> (name, arguments text)
        self._live: Live | None = None
        self._lock = threading.Lock()
        self._failed = False  # a RUN_ERROR was rendered

    # -- approval -------------------------------------------------------------------------------
    def approve(self, call: ToolCallPart) -> bool:
        """Ask y/n whether ``call`` may run (pass as ``chat(approve=...)``). Not a terminal: denies."""
        with self._lock:
            args = json.dumps(call.arguments, ensure_ascii=False) if call.arguments is not None else "?"
            if self.plain and self._stdin is None and not sys.stdin.isatty():
                self.console.print(f"[tool {call.name} needs approval; no terminal to ask: denied]")
                return False
            live = self._live
            if live is not None:
                live.stop()
            try:
                return Confirm.ask(f"Run tool [bold]{call.name}[/bold]({_preview(args)})?",
                                   console=self.console, default=False, stream=self._stdin)
            finally:
                if live is not None:
                    live.start()

    # -- rendering ------------------------------------------------------------------------------
    def _view(self) -> RenderableType:
        spinners = [Spinner("dots", Text.assemble((name, "bold cyan"), f"({_preview(args)})"))
                    for name, args in self._running.values()]
        return Group(self._tail, *spinners)

    def _commit(self, markdown: str) -> None:
        if markdown.strip():
            self.console.print(Markdown(markdown))

    def render(self, events: Iterable[BaseEvent]) -> int:
        """Consume ``events`` and render them; return the exit code (1 when the run ended in error)."""
        if self.plain:
            return _PlainWriter(self.console.file).write(events)
        self._failed = False
        with Live(self._view(), console=self.console, refresh_per_second=10, transient=True,
                  get_renderable=self._view) as live:
            self._live = live
            try:
                for ev in events:
                    handler = _LIVE_HANDLERS.get(type(ev))
                    if handler is not None:
                        handler(self, ev)
            finally:
                self._commit(self._tail.take_all())
                self._live = None
        return 1 if self._failed else 0

    # -- live handlers, one per event class (see _LIVE_HANDLERS) ---------------------------------
    def _text_content(self, ev: TextMessageContent) -> None:
        self._tail.add(ev.delta)
        self._commit(self._tail.take_done())

    def _text_end(self, ev: TextMessageEnd) -> None:
        self._commit(self._tail.take_all())

    def _tool_start(self, ev: ToolCallStart) -> None:
        self._running[ev.tool_call_id] = (ev.tool_call_name, "")

    def _tool_args(self, ev: ToolCallArgs) -> None:
        name, args = self._running.get(ev.tool_call_id, ("?", ""))
        if len(args) < _PREVIEW:
            self._running[ev.tool_call_id] = (name, args + ev.delta)

    def _tool_result(self, ev: ToolCallResult) -> None:
        name, _ = self._running.pop(ev.tool_call_id, ("tool", ""))
        mark, style = ("✗", "red") if ev.error else ("✓", "green")
        self.console.print(Text.assemble((f"{mark} {name}", style), " → ", _preview(ev.content)))

    def _custom(self, ev: Custom) -> None:
        payload = parse_custom(ev)
        if isinstance(payload, ToolCallRepairedPayload):
            if payload.tool_call_id in self._running:  # show the call that runs, not the one the model streamed
                self._running[payload.tool_call_id] = (
                    payload.tool_name or "?", json.dumps(payload.input, ensure_ascii=False))
        elif isinstance(payload, ApprovalRequestedPayload):
            self.console.print(f"[yellow]approval requested:[/yellow] {payload.tool_name or payload.tool_call_id}")
        elif isinstance(payload, MessageAddedPayload):  # a --live line joined the run here
            self.console.print(Text.assemble(("sent: ", "cyan"), _preview(payload.content)))

    def _run_finished(self, ev: RunFinished) -> None:
        outcome = ev.outcome.type if ev.outcome else "success"
        if outcome != "success":
            self.console.print(f"[dim]run {outcome}[/dim]")

    def _run_error(self, ev: RunError) -> None:
        self._commit(self._tail.take_all())
        self.console.print(Text(error_line(ev.code, ev.message), style="red"))
        self._failed = True


_LIVE_HANDLERS: dict[type[BaseEvent], Callable[[LiveRenderer, Any], None]] = {
    TextMessageContent: LiveRenderer._text_content,
    TextMessageEnd: LiveRenderer._text_end,
    ToolCallStart: LiveRenderer._tool_start,
    ToolCallArgs: LiveRenderer._tool_args,
    ToolCallResult: LiveRenderer._tool_result,
    Custom: LiveRenderer._custom,
    RunFinished: LiveRenderer._run_finished,
    RunError: LiveRenderer._run_error,
}


class _PlainWriter:
    """Plain-text rendering (stdout is not a terminal): deltas as they come, one line per tool call,
    result and error."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.failed = False
        self.at_line_start = True
        self.names: dict[str, str] = {}  # tool call id -> tool name

    def write(self, events: Iterable[BaseEvent]) -> int:
        out = self.out
        for ev in events:
            handler = _PLAIN_HANDLERS.get(type(ev))
            line = handler(self, ev) if handler is not None else None
            if line is not None:
                out.write(("" if self.at_line_start else "\n") + line + "\n")
                out.flush()
                self.at_line_start = True
        if not self.at_line_start:
            out.write("\n")
        out.flush()
        return 1 if self.failed else 0

    # -- handlers, one per event class (see _PLAIN_HANDLERS): the line to print, or None ----------
    def _text_content(self, ev: TextMessageContent) -> None:
        self.out.write(ev.delta)
        self.out.flush()
        self.at_line_start = ev.delta.endswith("\n")

    def _tool_start(self, ev: ToolCallStart) -> str:
        self.names[ev.tool_call_id] = ev.tool_call_name
        return f"[tool call] {ev.tool_call_name} ({ev.tool_call_id})"

    def _custom(self, ev: Custom) -> str | None:
        repaired = parse_custom(ev)
        if isinstance(repaired, ToolCallRepairedPayload):
            self.names[repaired.tool_call_id] = repaired.tool_name or "?"
            return f"[tool call repaired] {repaired.tool_name} ({repaired.tool_call_id})"
        return None

    def _tool_result(self, ev: ToolCallResult) -> str:
        state = "error" if ev.error else "result"
        return f"[tool {state}] {self.names.get(ev.tool_call_id, ev.tool_call_id)}: {_preview(ev.content)}"

    def _run_error(self, ev: RunError) -> str:
        self.failed = True
        return error_line(ev.code, ev.message)

    def _run_finished(self, ev: RunFinished) -> str | None:
        return f"[run {ev.outcome.type}]" if ev.outcome is not None and ev.outcome.type != "success" else None


_PLAIN_HANDLERS: dict[type[BaseEvent], Callable[[_PlainWriter, Any], str | None]] = {
    TextMessageContent: _PlainWriter._text_content,
    ToolCallStart: _PlainWriter._tool_start,
    Custom: _PlainWriter._custom,
    ToolCallResult: _PlainWriter._tool_result,
    RunError: _PlainWriter._run_error,
    RunFinished: _PlainWriter._run_finished,
}


def render_live(stream: Iterable[BaseEvent], console: Console | None = None) -> int:
    """Render ``stream`` live on the terminal (plain text when stdout is not one); return the exit code
    (1 when the run ended with ``RUN_ERROR``)."""
    return LiveRenderer(console).render(stream)
