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

Nested runs (AG-UI 1.0 subagents, as ``Agent.as_tool`` streams them and ``@ag-ui/client``
``verifyEvents`` checks them): ``SUBAGENT_STARTED {subagentRunId: R}`` opens the sub-run ``R``, and
``SUBAGENT_FINISHED`` / ``SUBAGENT_ERROR`` for ``R`` end it. Events carrying ``subagentRunId: R`` are
``R``'s; the others (``RUN_*``, ``MESSAGES_SNAPSHOT`` and every event without ``subagentRunId``) are the
run's own. The run's own events are checked by the grammar above as if the sub-runs were not there, and
each sub-run's events are checked as a run of their own, in the same form, with ``SUBAGENT_STARTED`` as its
``RUN_STARTED`` and its ``SUBAGENT_FINISHED`` / ``SUBAGENT_ERROR`` as its ``RUN_FINISHED`` / ``RUN_ERROR``:
its steps, text, reasoning and tool-call blocks open and close within it (``SUBAGENT_FINISHED`` with
anything open is an error, ``SUBAGENT_ERROR`` may leave them open), a ``TOOL_CALL_RESULT`` answers one of
its own calls. Besides:

* a sub-run's event before its ``SUBAGENT_STARTED`` or after its end is an error, and so is a sub-run id
  started twice; ``SUBAGENT_STARTED`` needs ``subagentRunId`` and ``name``, ``SUBAGENT_ERROR`` a
  ``message``, ``SUBAGENT_FINISHED``'s ``outcome`` is ``{"type": "success" | "suspended"}`` or absent;
* a sub-run belongs to the run that started it: the run itself, or the sub-run named by
  ``parentSubagentRunId`` (nesting to any depth), which must be active then; its ``SUBAGENT_*`` events are
  that run's (allowed inside or between its steps); a sub-run that ends successfully
  (``SUBAGENT_FINISHED``, ``RUN_FINISHED``) may not leave a sub-run of its own running, and one that ends
  in error ends its running sub-runs with it;
* message, reasoning and tool-call ids belong to the run that first used them (``verifyEvents``: a
  block is continued only by its opener's subagent); a tool-call id is never started twice in the
  stream, and ``TOOL_CALL_START.parentMessageId`` naming a known message of another run is an error;
* ``RUN_FINISHED`` fails while any sub-run is still running, and while a sub-run that ended in
  ``SUBAGENT_ERROR`` left a block or step open (as ``verifyEvents`` does: the whole stream's blocks must be
  closed when the run finishes).

``form="auto"`` picks ``run`` when a ``STEP_STARTED`` appears, else ``call``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NoReturn

from .._errors import HookstreamError
from .._events import BaseEvent

__all__ = ["GrammarError", "check_events"]


class GrammarError(HookstreamError, AssertionError):
    """The event stream breaks the grammar; the message names the event index and the rule. An
    :class:`AssertionError` too, so pytest reports it as a failed check."""

    code = "grammar_error"


def _t(ev: Any) -> str:
    return ev.type if isinstance(ev, BaseEvent) else str(ev.get("type"))


def _f(ev: Any, name: str, camel: str) -> Any:
    return getattr(ev, name, None) if isinstance(ev, BaseEvent) else ev.get(camel)


_SUBAGENT = ("SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR")
_RUN_SCOPED = ("RUN_STARTED", "RUN_FINISHED", "RUN_ERROR", "MESSAGES_SNAPSHOT")
_PASS = ("CUSTOM", "REASONING_ENCRYPTED_VALUE", "STATE_SNAPSHOT", "STATE_DELTA", "MESSAGES_SNAPSHOT", "RAW")


class _Run:
    """The grammar state of one run: the top-level run (``rid`` ``None``) or a sub-run."""

    __slots__ = ("children", "ended_tools", "in_step", "parent", "reasoning", "reasoning_msgs", "rid", "terminal",
                 "text", "tools")

    def __init__(self, rid: str | None, parent: _Run | None) -> None:
        self.rid = rid
        self.parent = parent
        self.text: set[str] = set()
        self.reasoning_msgs: set[str] = set()
        self.reasoning: set[str] = set()
        self.tools: set[str] = set()
        self.ended_tools: set[str] = set()
        self.in_step: str | None = None
        self.terminal: str | None = None  # RUN_FINISHED / RUN_ERROR, or SUBAGENT_FINISHED / SUBAGENT_ERROR
        self.children: list[_Run] = []  # sub-runs it started that are still running

    @property
    def where(self) -> str:
        return "" if self.rid is None else f" (subagent run {self.rid!r})"

    def open_blocks(self) -> bool:
        return bool(self.text or self.reasoning or self.tools or self.reasoning_msgs)

    def describe_open(self) -> str:
        return (f"text={sorted(self.text)} reasoning={sorted(self.reasoning | self.reasoning_msgs)} "
                f"tools={sorted(self.tools)}")


def check_events(events: Iterable[BaseEvent | dict[str, Any]], form: str = "auto") -> list[Any]:
    """Check ``events`` (event objects or AG-UI JSON dicts); return them as a list.

    Raises :class:`GrammarError` on the first violation.
    """
    evs = list(events)
    if form == "auto":
        form = "run" if any(_t(e) == "STEP_STARTED" for e in evs) else "call"
    if form not in ("call", "run"):
        raise ValueError(f"form must be 'call', 'run' or 'auto', not {form!r}")

    def fail(i: int, msg: str) -> NoReturn:
        raise GrammarError(f"event {i} ({_t(evs[i]) if i < len(evs) else 'end'}): {msg}")

    if not evs:
        raise GrammarError("empty stream: expected RUN_STARTED first")
    if _t(evs[0]) != "RUN_STARTED":
        fail(0, "stream must start with RUN_STARTED")
    top = _Run(None, None)
    subs: dict[str, _Run] = {}  # every sub-run started so far, running or ended
    errored: list[_Run] = []  # sub-runs that ended in SUBAGENT_ERROR (they may have left blocks open)
    owners: dict[tuple[str, str], str | None] = {}  # (kind, id) -> the run that first used it

    def own(i: int, run: _Run, kind: str, ident: Any, what: str) -> None:
        key = (kind, str(ident))
        first = owners.setdefault(key, run.rid)
        if first != run.rid:
            by = "the run itself" if first is None else f"subagent run {first!r}"
            fail(i, f"{what} {ident!r} belongs to {by}, not to{run.where or ' the run itself'}")

    def end_sub(run: _Run, how: str) -> None:
        run.terminal = how
        if run.parent is not None and run in run.parent.children:
            run.parent.children.remove(run)
        for child in list(run.children):  # cut off with it
            end_sub(child, "SUBAGENT_ERROR")
            errored.append(child)

    for i, ev in enumerate(evs[1:], start=1):
        t = _t(ev)
        if top.terminal is not None:
            fail(i, f"nothing may follow {top.terminal}")

        # -- which run the event belongs to --------------------------------------------------------
        if t in _SUBAGENT:
            sid = _f(ev, "subagent_run_id", "subagentRunId")
            if not isinstance(sid, str) or not sid:
                fail(i, f"{t} without a subagentRunId")
            if t == "SUBAGENT_STARTED":
                if not isinstance(_f(ev, "name", "name"), str):
                    fail(i, "SUBAGENT_STARTED without a name")
                if sid in subs:
                    fail(i, f"subagent run {sid!r} started twice (subagent run ids are per invocation)")
                psid = _f(ev, "parent_subagent_run_id", "parentSubagentRunId")
                if psid is None:
                    parent = top
                elif psid not in subs:
                    fail(i, f"parentSubagentRunId {psid!r} names no subagent run started before")
                else:
                    parent = subs[psid]
                    if parent.terminal is not None:
                        fail(i, f"parentSubagentRunId {psid!r} already ended with {parent.terminal}")
                run = _Run(sid, parent)
                subs[sid] = run
                parent.children.append(run)
                continue
            found = subs.get(sid)
            if found is None:
                fail(i, f"no subagent run {sid!r} was started (SUBAGENT_STARTED must come first)")
            run = found
            if run.terminal is not None:
                fail(i, f"subagent run {sid!r} already ended with {run.terminal}")
            if t == "SUBAGENT_FINISHED":
                outcome = _f(ev, "outcome", "outcome")
                if outcome is not None and (not isinstance(outcome, dict)
                                            or outcome.get("type") not in ("success", "suspended")):
                    fail(i, f"outcome {outcome!r} is neither {{'type': 'success'}} nor {{'type': 'suspended'}}")
                if run.open_blocks():
                    fail(i, f"SUBAGENT_FINISHED with open blocks{run.where}: {run.describe_open()}")
                if run.in_step is not None:
                    fail(i, f"SUBAGENT_FINISHED inside step {run.in_step!r}{run.where}")
                if run.children:
                    fail(i, f"SUBAGENT_FINISHED while its subagent runs are running: "
                            f"{[c.rid for c in run.children]}{run.where}")
                end_sub(run, t)
            else:
                if not isinstance(_f(ev, "message", "message"), str):
                    fail(i, f"SUBAGENT_ERROR without a message{run.where}")
                end_sub(run, t)
                errored.append(run)
            continue
        sid = None if t in _RUN_SCOPED else _f(ev, "subagent_run_id", "subagentRunId")
        if sid is None:
            run = top
        else:
            found = subs.get(sid) if isinstance(sid, str) else None
            if found is None:
                fail(i, f"event of subagent run {sid!r} before its SUBAGENT_STARTED")
            run = found
            if run.terminal is not None:
                fail(i, f"event of subagent run {sid!r} after its {run.terminal}")
        w = run.where

        # -- the run grammar, per run --------------------------------------------------------------
        if t == "RUN_STARTED":
            fail(i, "second RUN_STARTED in one run")
        elif t == "TEXT_MESSAGE_START":
            mid = _f(ev, "message_id", "messageId")
            own(i, run, "message", mid, "text message")
            if mid in run.text:
                fail(i, f"text message {mid!r} already open{w}")
            run.text.add(mid)
        elif t in ("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"):
            mid = _f(ev, "message_id", "messageId")
            own(i, run, "message", mid, "text message")
            if mid not in run.text:
                fail(i, f"text message {mid!r} is not open{w}")
            if t == "TEXT_MESSAGE_END":
                run.text.discard(mid)
        elif t == "REASONING_START":
            mid = _f(ev, "message_id", "messageId")
            own(i, run, "reasoning", mid, "reasoning")
            if mid in run.reasoning:
                fail(i, f"reasoning {mid!r} already open{w}")
            run.reasoning.add(mid)
        elif t == "REASONING_MESSAGE_START":
            mid = _f(ev, "message_id", "messageId")
            own(i, run, "reasoning", mid, "reasoning message")
            if not run.reasoning:
                fail(i, f"REASONING_MESSAGE_START outside REASONING_START/END{w}")
            if mid in run.reasoning_msgs:
                fail(i, f"reasoning message {mid!r} already open{w}")
            run.reasoning_msgs.add(mid)
        elif t in ("REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END"):
            mid = _f(ev, "message_id", "messageId")
            own(i, run, "reasoning", mid, "reasoning message")
            if mid not in run.reasoning_msgs:
                fail(i, f"reasoning message {mid!r} is not open{w}")
            if t == "REASONING_MESSAGE_END":
                run.reasoning_msgs.discard(mid)
        elif t == "REASONING_END":
            mid = _f(ev, "message_id", "messageId")
            own(i, run, "reasoning", mid, "reasoning")
            if mid not in run.reasoning:
                fail(i, f"reasoning {mid!r} is not open{w}")
            if run.reasoning_msgs:
                fail(i, f"REASONING_END while a reasoning message is open{w}")
            run.reasoning.discard(mid)
        elif t == "TOOL_CALL_START":
            tid = _f(ev, "tool_call_id", "toolCallId")
            own(i, run, "tool", tid, "tool call id")
            if tid in run.tools:
                fail(i, f"tool call {tid!r} already open{w}")
            if tid in run.ended_tools:
                fail(i, f"tool call id {tid!r} reused{w}")
            if not _f(ev, "tool_call_name", "toolCallName"):
                fail(i, f"tool call without a name{w}")
            parent_mid = _f(ev, "parent_message_id", "parentMessageId")
            if parent_mid is not None and owners.get(("message", str(parent_mid)), run.rid) != run.rid:
                fail(i, f"parentMessageId {parent_mid!r} is a message of another run than{w or ' the run itself'}")
            run.tools.add(tid)
        elif t in ("TOOL_CALL_ARGS", "TOOL_CALL_END"):
            tid = _f(ev, "tool_call_id", "toolCallId")
            own(i, run, "tool", tid, "tool call id")
            if tid not in run.tools:
                fail(i, f"tool call {tid!r} is not open{w}")
            if t == "TOOL_CALL_END":
                run.tools.discard(tid)
                run.ended_tools.add(tid)
        elif t == "TOOL_CALL_RESULT":
            tid = _f(ev, "tool_call_id", "toolCallId")
            if tid not in run.ended_tools:
                fail(i, f"result for tool call {tid!r} that was not started and ended{w}")
        elif t == "STEP_STARTED":
            if form == "call":
                fail(i, f"STEP_STARTED inside an adapter call{w}")
            if run.in_step is not None:
                fail(i, f"step {run.in_step!r} still open{w}")
            run.in_step = _f(ev, "step_name", "stepName")
        elif t == "STEP_FINISHED":
            if run.in_step is None or run.in_step != _f(ev, "step_name", "stepName"):
                fail(i, f"STEP_FINISHED without the matching STEP_STARTED{w}")
            if run.open_blocks():
                fail(i, f"step finished with open blocks{w}")
            run.in_step = None
        elif t == "RUN_FINISHED":
            if top.open_blocks():
                fail(i, f"RUN_FINISHED with open blocks: text={sorted(top.text)} reasoning={sorted(top.reasoning)} "
                     f"tools={sorted(top.tools)}")
            if top.in_step is not None:
                fail(i, f"RUN_FINISHED inside step {top.in_step!r}")
            if top.children:
                fail(i, f"RUN_FINISHED while subagent runs are running: {[c.rid for c in top.children]}")
            for sub in errored:
                if sub.open_blocks() or sub.in_step is not None:
                    fail(i, f"RUN_FINISHED while subagent run {sub.rid!r}, ended by {sub.terminal}, left blocks "
                            f"open: {sub.describe_open()} step={sub.in_step!r}")
            top.terminal = t
        elif t == "RUN_ERROR":
            top.terminal = t
        elif t in _PASS:
            pass
        else:
            fail(i, f"unknown event type {t!r}")
    if top.terminal is None:
        fail(len(evs), "stream did not end with RUN_FINISHED or RUN_ERROR")
    return evs
