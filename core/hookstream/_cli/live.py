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
from collections.abc import Iterable
from typing import TextIO

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.markdown import Markdown
from rich.prompt import Confirm
from rich.spinner import Spinner
from rich.text import Text

from .._custom import ApprovalRequestedPayload, ToolCallRepairedPayload, parse_custom
from .._events import (
    BaseEvent,
    Custom,
    RunError,
    RunFinished,
    StepStarted,
    TextMessageContent,
    TextMessageEnd,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
)
from .._messages import ToolCallPart

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
            return self._render_plain(events)
        failed = False
        with Live(self._view(), console=self.console, refresh_per_second=10, transient=True,
                  get_renderable=self._view) as live:
            self._live = live
            try:
                for ev in events:
                    failed = self._on_event(ev) or failed
            finally:
                self._commit(self._tail.take_all())
                self._live = None
        return 1 if failed else 0

    def _on_event(self, ev: BaseEvent) -> bool:
        t = type(ev)
        if t is TextMessageContent:
            self._tail.add(ev.delta)  # type: ignore[attr-defined]
            self._commit(self._tail.take_done())
        elif t is TextMessageEnd:
            self._commit(self._tail.take_all())
        elif t is ToolCallStart:
            self._running[ev.tool_call_id] = (ev.tool_call_name, "")  # type: ignore[attr-defined]
        elif t is ToolCallArgs:
            name, args = self._running.get(ev.tool_call_id, ("?", ""))  # type: ignore[attr-defined]
            if len(args) < _PREVIEW:
                self._running[ev.tool_call_id] = (name, args + ev.delta)  # type: ignore[attr-defined]
        elif t is ToolCallResult:
            name, _ = self._running.pop(ev.tool_call_id, ("tool", ""))  # type: ignore[attr-defined]
            mark, style = ("✗", "red") if ev.error else ("✓", "green")  # type: ignore[attr-defined]
            self.console.print(Text.assemble((f"{mark} {name}", style), " → ", _preview(ev.content)))  # type: ignore[attr-defined]
        elif t is Custom:
            payload = parse_custom(ev)
            if isinstance(payload, ToolCallRepairedPayload):
                if payload.tool_call_id in self._running:  # show the call that runs, not the one the model streamed
                    self._running[payload.tool_call_id] = (
                        payload.tool_name or "?", json.dumps(payload.input, ensure_ascii=False))
            elif isinstance(payload, ApprovalRequestedPayload):
                self.console.print(f"[yellow]approval requested:[/yellow] {payload.tool_name or payload.tool_call_id}")
        elif t is RunFinished:
            outcome = ev.outcome.type if ev.outcome else "success"  # type: ignore[attr-defined]
            if outcome != "success":
                self.console.print(f"[dim]run {outcome}[/dim]")
        elif t is RunError:
            self._commit(self._tail.take_all())
            self.console.print(f"[red]error ({ev.code}): {ev.message}[/red]")  # type: ignore[attr-defined]
            return True
        return False

    def _render_plain(self, events: Iterable[BaseEvent]) -> int:
        out = self.console.file
        failed = False
        at_line_start = True
        names: dict[str, str] = {}
        for ev in events:
            t = type(ev)
            line: str | None = None
            if t is TextMessageContent:
                out.write(ev.delta)  # type: ignore[attr-defined]
                out.flush()
                at_line_start = ev.delta.endswith("\n")  # type: ignore[attr-defined]
            elif t is StepStarted or t is ToolCallEnd:
                continue
            elif t is ToolCallStart:
                names[ev.tool_call_id] = ev.tool_call_name  # type: ignore[attr-defined]
                line = f"[tool call] {ev.tool_call_name} ({ev.tool_call_id})"  # type: ignore[attr-defined]
            elif t is Custom and isinstance(repaired := parse_custom(ev), ToolCallRepairedPayload):
                names[repaired.tool_call_id] = repaired.tool_name or "?"
                line = f"[tool call repaired] {repaired.tool_name} ({repaired.tool_call_id})"
            elif t is ToolCallResult:
                state = "error" if ev.error else "result"  # type: ignore[attr-defined]
                line = f"[tool {state}] {names.get(ev.tool_call_id, ev.tool_call_id)}: {_preview(ev.content)}"  # type: ignore[attr-defined]
            elif t is RunError:
                line = f"error ({ev.code}): {ev.message}"  # type: ignore[attr-defined]
                failed = True
            elif t is RunFinished and ev.outcome is not None and ev.outcome.type != "success":  # type: ignore[attr-defined]
                line = f"[run {ev.outcome.type}]"  # type: ignore[attr-defined]
            if line is not None:
                out.write(("" if at_line_start else "\n") + line + "\n")
                out.flush()
                at_line_start = True
        if not at_line_start:
            out.write("\n")
        out.flush()
        return 1 if failed else 0


def render_live(stream: Iterable[BaseEvent], console: Console | None = None) -> int:
    """Render ``stream`` live on the terminal (plain text when stdout is not one); return the exit code
    (1 when the run ended with ``RUN_ERROR``)."""
    return LiveRenderer(console).render(stream)
