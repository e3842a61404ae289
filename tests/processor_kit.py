"""Shared helpers for the processor tests: a callback recorder and short event constructors."""

from __future__ import annotations

from typing import Any

from hookstream import StreamProcessor, UIMessage
from hookstream import events as E


class Recorder:
    """Records every processor callback with its arguments (texts copied, messages counted)."""

    def __init__(self) -> None:
        self.messages_changes = 0
        self.text_updates: list[tuple[str, str]] = []
        self.states: list[tuple[str, str, str, str]] = []
        self.stream_ends: list[UIMessage | None] = []
        self.errors: list[Any] = []
        self.tool_calls: list[Any] = []
        self.approvals: list[Any] = []

    def processor(self, **kw: Any) -> StreamProcessor:
        return StreamProcessor(
            on_messages_change=self._mc,
            on_text_update=lambda mid, text: self.text_updates.append((mid, text)),
            on_tool_call_state_change=lambda *a: self.states.append(a),
            on_stream_end=self.stream_ends.append,
            on_error=self.errors.append,
            on_tool_call=self.tool_calls.append,
            on_approval_request=self.approvals.append,
            **kw,
        )

    def _mc(self, messages: list[UIMessage]) -> None:
        self.messages_changes += 1


def run_start() -> E.RunStarted:
    return E.RunStarted("t1", "r1")


def run_end(reason: str = "stop", **kw: Any) -> E.RunFinished:
    return E.RunFinished("t1", "r1", finish_reason=reason, **kw)


def text(mid: str, *deltas: str) -> list[E.BaseEvent]:
    return [E.TextMessageStart(mid), *(E.TextMessageContent(mid, d) for d in deltas), E.TextMessageEnd(mid)]


def tool(tid: str, name: str, *deltas: str, end: bool = True, **end_kw: Any) -> list[E.BaseEvent]:
    evs: list[E.BaseEvent] = [E.ToolCallStart(tid, name), *(E.ToolCallArgs(tid, d) for d in deltas)]
    if end:
        evs.append(E.ToolCallEnd(tid, **end_kw))
    return evs


def shape(messages: list[UIMessage]) -> list[list[tuple[Any, ...]]]:
    """Parts of each message as comparable tuples: (type, main content, state)."""
    out = []
    for m in messages:
        row: list[tuple[Any, ...]] = []
        for p in m.parts:
            if p.type in ("text", "thinking"):
                row.append((p.type, p.content))  # type: ignore[union-attr]
            elif p.type == "tool-call":
                row.append((p.type, p.id, p.input, p.state))  # type: ignore[union-attr]
            else:
                row.append((p.type, p.tool_call_id, p.content, p.state))  # type: ignore[union-attr]
        out.append(row)
    return out
