"""Event grammar checker: the contract every adapter stream and every engine run must obey.

Two forms are accepted (``check_events(events, form=...)``):

``"call"`` (one adapter call)::

    Stream    ::= RUN_STARTED Content* Terminal
    Content   ::= TextBlock | ToolCall | Reasoning         (tool calls may interleave by id)
    Terminal  ::= RUN_FINISHED | RUN_ERROR

``"run"`` (the engine's single AG-UI run): one ``RUN_STARTED``, then steps
(``STEP_STARTED`` Content* ``STEP_FINISHED``), ``TOOL_CALL_RESULT`` and ``CUSTOM`` events between them,
and one ``RUN_FINISHED`` or ``RUN_ERROR`` at the end; nothing after it.

Rules checked in both forms: every ``*_CONTENT``/``*_ARGS``/``*_END`` refers to an open block with the
same id; ids are not reused while open; all text, reasoning and tool-call blocks are closed before
``RUN_FINISHED`` (``RUN_ERROR`` may leave them open: that is how a cut-off stream ends); a
``TOOL_CALL_RESULT`` refers to a tool call that was started and ended.

``form="auto"`` picks ``run`` when a ``STEP_STARTED`` appears, else ``call``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._events import BaseEvent

__all__ = ["GrammarError", "check_events"]


class GrammarError(AssertionError):
    """The event stream breaks the grammar; the message names the event index and the rule."""


def _t(ev: Any) -> str:
    return ev.type if isinstance(ev, BaseEvent) else str(ev.get("type"))


def _f(ev: Any, name: str, camel: str) -> Any:
    return getattr(ev, name) if isinstance(ev, BaseEvent) else ev.get(camel)


def check_events(events: Iterable[BaseEvent | dict[str, Any]], form: str = "auto") -> list[Any]:
    """Check ``events`` (event objects or AG-UI JSON dicts); return them as a list.

    Raises :class:`GrammarError` on the first violation.
    """
    evs = list(events)
    if form == "auto":
        form = "run" if any(_t(e) == "STEP_STARTED" for e in evs) else "call"
    if form not in ("call", "run"):
        raise ValueError(f"form must be 'call', 'run' or 'auto', not {form!r}")

    def fail(i: int, msg: str) -> None:
        raise GrammarError(f"event {i} ({_t(evs[i]) if i < len(evs) else 'end'}): {msg}")

    if not evs:
        raise GrammarError("empty stream: expected RUN_STARTED first")
    if _t(evs[0]) != "RUN_STARTED":
        fail(0, "stream must start with RUN_STARTED")
    text: set[str] = set()
    reasoning_msgs: set[str] = set()
    reasoning: set[str] = set()
    tools: set[str] = set()
    ended_tools: set[str] = set()
    in_step: str | None = None
    terminal = None
    for i, ev in enumerate(evs[1:], start=1):
        t = _t(ev)
        if terminal is not None:
            fail(i, f"nothing may follow {terminal}")
        if t == "RUN_STARTED":
            fail(i, "second RUN_STARTED in one run")
        elif t == "TEXT_MESSAGE_START":
            mid = _f(ev, "message_id", "messageId")
            if mid in text:
                fail(i, f"text message {mid!r} already open")
            text.add(mid)
        elif t in ("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"):
            mid = _f(ev, "message_id", "messageId")
            if mid not in text:
                fail(i, f"text message {mid!r} is not open")
            if t == "TEXT_MESSAGE_END":
                text.discard(mid)
        elif t == "REASONING_START":
            mid = _f(ev, "message_id", "messageId")
            if mid in reasoning:
                fail(i, f"reasoning {mid!r} already open")
            reasoning.add(mid)
        elif t == "REASONING_MESSAGE_START":
            mid = _f(ev, "message_id", "messageId")
            if not reasoning:
                fail(i, "REASONING_MESSAGE_START outside REASONING_START/END")
            if mid in reasoning_msgs:
                fail(i, f"reasoning message {mid!r} already open")
            reasoning_msgs.add(mid)
        elif t in ("REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END"):
            mid = _f(ev, "message_id", "messageId")
            if mid not in reasoning_msgs:
                fail(i, f"reasoning message {mid!r} is not open")
            if t == "REASONING_MESSAGE_END":
                reasoning_msgs.discard(mid)
        elif t == "REASONING_END":
            mid = _f(ev, "message_id", "messageId")
            if mid not in reasoning:
                fail(i, f"reasoning {mid!r} is not open")
            if reasoning_msgs:
                fail(i, "REASONING_END while a reasoning message is open")
            reasoning.discard(mid)
        elif t == "TOOL_CALL_START":
            tid = _f(ev, "tool_call_id", "toolCallId")
            if tid in tools:
                fail(i, f"tool call {tid!r} already open")
            if tid in ended_tools:
                fail(i, f"tool call id {tid!r} reused")
            if not _f(ev, "tool_call_name", "toolCallName"):
                fail(i, "tool call without a name")
            tools.add(tid)
        elif t in ("TOOL_CALL_ARGS", "TOOL_CALL_END"):
            tid = _f(ev, "tool_call_id", "toolCallId")
            if tid not in tools:
                fail(i, f"tool call {tid!r} is not open")
            if t == "TOOL_CALL_END":
                tools.discard(tid)
                ended_tools.add(tid)
        elif t == "TOOL_CALL_RESULT":
            tid = _f(ev, "tool_call_id", "toolCallId")
            if tid not in ended_tools:
                fail(i, f"result for tool call {tid!r} that was not started and ended")
        elif t == "STEP_STARTED":
            if form == "call":
                fail(i, "STEP_STARTED inside an adapter call")
            if in_step is not None:
                fail(i, f"step {in_step!r} still open")
            in_step = _f(ev, "step_name", "stepName")
        elif t == "STEP_FINISHED":
            if in_step is None or in_step != _f(ev, "step_name", "stepName"):
                fail(i, "STEP_FINISHED without the matching STEP_STARTED")
            if text or reasoning or tools:
                fail(i, "step finished with open blocks")
            in_step = None
        elif t == "RUN_FINISHED":
            if text or reasoning or tools or reasoning_msgs:
                fail(i, f"RUN_FINISHED with open blocks: text={sorted(text)} reasoning={sorted(reasoning)} "
                     f"tools={sorted(tools)}")
            if in_step is not None:
                fail(i, f"RUN_FINISHED inside step {in_step!r}")
            terminal = t
        elif t == "RUN_ERROR":
            terminal = t
        elif t in ("CUSTOM", "REASONING_ENCRYPTED_VALUE", "STATE_SNAPSHOT", "STATE_DELTA", "MESSAGES_SNAPSHOT",
                   "RAW"):
            pass
        else:
            fail(i, f"unknown event type {t!r}")
    if terminal is None:
        fail(len(evs), "stream did not end with RUN_FINISHED or RUN_ERROR")
    return evs
