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

from collections.abc import Callable, Iterable
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
_PASS = ("CUSTOM", "REASONING_ENCRYPTED_VALUE", "STATE_SNAPSHOT", "STATE_DELTA", "MESSAGES_SNAPSHOT", "RAW",
         "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA")


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
    if not evs:
        raise GrammarError("empty stream: expected RUN_STARTED first")
    _Checker(evs, form).check()
    return evs


class _Checker:
    """One pass over a stream: which run each event belongs to, then one handler per event type."""

    __slots__ = ("errored", "evs", "form", "i", "owners", "subs", "top")

    def __init__(self, evs: list[Any], form: str) -> None:
        self.evs = evs
        self.form = form
        self.i = 0  # the index of the event being checked, for the messages
        self.top = _Run(None, None)
        self.subs: dict[str, _Run] = {}  # every sub-run started so far, running or ended
        self.errored: list[_Run] = []  # sub-runs that ended in SUBAGENT_ERROR (they may have left blocks open)
        self.owners: dict[tuple[str, str], str | None] = {}  # (kind, id) -> the run that first used it

    def fail(self, msg: str) -> NoReturn:
        i = self.i
        raise GrammarError(f"event {i} ({_t(self.evs[i]) if i < len(self.evs) else 'end'}): {msg}")

    def check(self) -> None:
        if _t(self.evs[0]) != "RUN_STARTED":
            self.fail("stream must start with RUN_STARTED")
        top = self.top
        for i, ev in enumerate(self.evs[1:], start=1):
            self.i = i
            t = _t(ev)
            if top.terminal is not None:
                self.fail(f"nothing may follow {top.terminal}")
            if t in _SUBAGENT:
                self._subagent(t, ev)
                continue
            run = self._run_of(t, ev)
            handler = _HANDLERS.get(t)
            if handler is None:
                self.fail(f"unknown event type {t!r}")
            handler(self, run, t, ev)
        if top.terminal is None:
            self.i = len(self.evs)
            self.fail("stream did not end with RUN_FINISHED or RUN_ERROR")

    # -- which run an event belongs to ---------------------------------------------------------------

    def _run_of(self, t: str, ev: Any) -> _Run:
        sid = None if t in _RUN_SCOPED else _f(ev, "subagent_run_id", "subagentRunId")
        if sid is None:
            return self.top
        found = self.subs.get(sid) if isinstance(sid, str) else None
        if found is None:
            self.fail(f"event of subagent run {sid!r} before its SUBAGENT_STARTED")
        if found.terminal is not None:
            self.fail(f"event of subagent run {sid!r} after its {found.terminal}")
        return found

    def _own(self, run: _Run, kind: str, ident: Any, what: str) -> None:
        key = (kind, str(ident))
        first = self.owners.setdefault(key, run.rid)
        if first != run.rid:
            by = "the run itself" if first is None else f"subagent run {first!r}"
            self.fail(f"{what} {ident!r} belongs to {by}, not to{run.where or ' the run itself'}")

    # -- sub-runs: SUBAGENT_STARTED / _FINISHED / _ERROR ---------------------------------------------

    def _subagent(self, t: str, ev: Any) -> None:
        sid = _f(ev, "subagent_run_id", "subagentRunId")
        if not isinstance(sid, str) or not sid:
            self.fail(f"{t} without a subagentRunId")
        if t == "SUBAGENT_STARTED":
            self._subagent_started(sid, ev)
            return
        run = self.subs.get(sid)
        if run is None:
            self.fail(f"no subagent run {sid!r} was started (SUBAGENT_STARTED must come first)")
        if run.terminal is not None:
            self.fail(f"subagent run {sid!r} already ended with {run.terminal}")
        if t == "SUBAGENT_FINISHED":
            self._subagent_finished(run, ev)
        else:
            if not isinstance(_f(ev, "message", "message"), str):
                self.fail(f"SUBAGENT_ERROR without a message{run.where}")
            self._end_sub(run, t)
            self.errored.append(run)

    def _subagent_started(self, sid: str, ev: Any) -> None:
        if not isinstance(_f(ev, "name", "name"), str):
            self.fail("SUBAGENT_STARTED without a name")
        if sid in self.subs:
            self.fail(f"subagent run {sid!r} started twice (subagent run ids are per invocation)")
        psid = _f(ev, "parent_subagent_run_id", "parentSubagentRunId")
        if psid is None:
            parent = self.top
        elif psid not in self.subs:
            self.fail(f"parentSubagentRunId {psid!r} names no subagent run started before")
        else:
            parent = self.subs[psid]
            if parent.terminal is not None:
                self.fail(f"parentSubagentRunId {psid!r} already ended with {parent.terminal}")
        run = _Run(sid, parent)
        self.subs[sid] = run
        parent.children.append(run)

    def _subagent_finished(self, run: _Run, ev: Any) -> None:
        outcome = _f(ev, "outcome", "outcome")
        if outcome is not None and (not isinstance(outcome, dict)
                                    or outcome.get("type") not in ("success", "suspended")):
            self.fail(f"outcome {outcome!r} is neither {{'type': 'success'}} nor {{'type': 'suspended'}}")
        if run.open_blocks():
            self.fail(f"SUBAGENT_FINISHED with open blocks{run.where}: {run.describe_open()}")
        if run.in_step is not None:
            self.fail(f"SUBAGENT_FINISHED inside step {run.in_step!r}{run.where}")
        if run.children:
            self.fail(f"SUBAGENT_FINISHED while its subagent runs are running: "
                      f"{[c.rid for c in run.children]}{run.where}")
        self._end_sub(run, "SUBAGENT_FINISHED")

    def _end_sub(self, run: _Run, how: str) -> None:
        run.terminal = how
        if run.parent is not None and run in run.parent.children:
            run.parent.children.remove(run)
        for child in list(run.children):  # cut off with it
            self._end_sub(child, "SUBAGENT_ERROR")
            self.errored.append(child)

    # -- the run grammar, per run: one handler per event type (see _HANDLERS) ------------------------

    def _run_started(self, run: _Run, t: str, ev: Any) -> None:
        self.fail("second RUN_STARTED in one run")

    def _text_start(self, run: _Run, t: str, ev: Any) -> None:
        mid = _f(ev, "message_id", "messageId")
        self._own(run, "message", mid, "text message")
        if mid in run.text:
            self.fail(f"text message {mid!r} already open{run.where}")
        run.text.add(mid)

    def _text_continue(self, run: _Run, t: str, ev: Any) -> None:
        mid = _f(ev, "message_id", "messageId")
        self._own(run, "message", mid, "text message")
        if mid not in run.text:
            self.fail(f"text message {mid!r} is not open{run.where}")
        if t == "TEXT_MESSAGE_END":
            run.text.discard(mid)

    def _reasoning_start(self, run: _Run, t: str, ev: Any) -> None:
        mid = _f(ev, "message_id", "messageId")
        self._own(run, "reasoning", mid, "reasoning")
        if mid in run.reasoning:
            self.fail(f"reasoning {mid!r} already open{run.where}")
        run.reasoning.add(mid)

    def _reasoning_message_start(self, run: _Run, t: str, ev: Any) -> None:
        mid = _f(ev, "message_id", "messageId")
        self._own(run, "reasoning", mid, "reasoning message")
        if not run.reasoning:
            self.fail(f"REASONING_MESSAGE_START outside REASONING_START/END{run.where}")
        if mid in run.reasoning_msgs:
            self.fail(f"reasoning message {mid!r} already open{run.where}")
        run.reasoning_msgs.add(mid)

    def _reasoning_message_continue(self, run: _Run, t: str, ev: Any) -> None:
        mid = _f(ev, "message_id", "messageId")
        self._own(run, "reasoning", mid, "reasoning message")
        if mid not in run.reasoning_msgs:
            self.fail(f"reasoning message {mid!r} is not open{run.where}")
        if t == "REASONING_MESSAGE_END":
            run.reasoning_msgs.discard(mid)

    def _reasoning_end(self, run: _Run, t: str, ev: Any) -> None:
        mid = _f(ev, "message_id", "messageId")
        self._own(run, "reasoning", mid, "reasoning")
        if mid not in run.reasoning:
            self.fail(f"reasoning {mid!r} is not open{run.where}")
        if run.reasoning_msgs:
            self.fail(f"REASONING_END while a reasoning message is open{run.where}")
        run.reasoning.discard(mid)

    def _tool_start(self, run: _Run, t: str, ev: Any) -> None:
        w = run.where
        tid = _f(ev, "tool_call_id", "toolCallId")
        self._own(run, "tool", tid, "tool call id")
        if tid in run.tools:
            self.fail(f"tool call {tid!r} already open{w}")
        if tid in run.ended_tools:
            self.fail(f"tool call id {tid!r} reused{w}")
        if not _f(ev, "tool_call_name", "toolCallName"):
            self.fail(f"tool call without a name{w}")
        parent_mid = _f(ev, "parent_message_id", "parentMessageId")
        if parent_mid is not None and self.owners.get(("message", str(parent_mid)), run.rid) != run.rid:
            self.fail(f"parentMessageId {parent_mid!r} is a message of another run than{w or ' the run itself'}")
        run.tools.add(tid)

    def _tool_continue(self, run: _Run, t: str, ev: Any) -> None:
        tid = _f(ev, "tool_call_id", "toolCallId")
        self._own(run, "tool", tid, "tool call id")
        if tid not in run.tools:
            self.fail(f"tool call {tid!r} is not open{run.where}")
        if t == "TOOL_CALL_END":
            run.tools.discard(tid)
            run.ended_tools.add(tid)

    def _tool_result(self, run: _Run, t: str, ev: Any) -> None:
        tid = _f(ev, "tool_call_id", "toolCallId")
        if tid not in run.ended_tools:
            self.fail(f"result for tool call {tid!r} that was not started and ended{run.where}")

    def _step_started(self, run: _Run, t: str, ev: Any) -> None:
        if self.form == "call":
            self.fail(f"STEP_STARTED inside an adapter call{run.where}")
        if run.in_step is not None:
            self.fail(f"step {run.in_step!r} still open{run.where}")
        run.in_step = _f(ev, "step_name", "stepName")

    def _step_finished(self, run: _Run, t: str, ev: Any) -> None:
        if run.in_step is None or run.in_step != _f(ev, "step_name", "stepName"):
            self.fail(f"STEP_FINISHED without the matching STEP_STARTED{run.where}")
        if run.open_blocks():
            self.fail(f"step finished with open blocks{run.where}")
        run.in_step = None

    def _run_finished(self, run: _Run, t: str, ev: Any) -> None:
        top = self.top
        if top.open_blocks():
            self.fail(f"RUN_FINISHED with open blocks: text={sorted(top.text)} reasoning={sorted(top.reasoning)} "
                      f"tools={sorted(top.tools)}")
        if top.in_step is not None:
            self.fail(f"RUN_FINISHED inside step {top.in_step!r}")
        if top.children:
            self.fail(f"RUN_FINISHED while subagent runs are running: {[c.rid for c in top.children]}")
        for sub in self.errored:
            if sub.open_blocks() or sub.in_step is not None:
                self.fail(f"RUN_FINISHED while subagent run {sub.rid!r}, ended by {sub.terminal}, left blocks "
                          f"open: {sub.describe_open()} step={sub.in_step!r}")
        top.terminal = t

    def _run_error(self, run: _Run, t: str, ev: Any) -> None:
        self.top.terminal = t

    def _pass(self, run: _Run, t: str, ev: Any) -> None:
        pass


# Event type -> its check; a type missing here is an unknown event.
_HANDLERS: dict[str, Callable[[_Checker, _Run, str, Any], None]] = {
    "RUN_STARTED": _Checker._run_started,
    "TEXT_MESSAGE_START": _Checker._text_start,
    "TEXT_MESSAGE_CONTENT": _Checker._text_continue,
    "TEXT_MESSAGE_END": _Checker._text_continue,
    "REASONING_START": _Checker._reasoning_start,
    "REASONING_MESSAGE_START": _Checker._reasoning_message_start,
    "REASONING_MESSAGE_CONTENT": _Checker._reasoning_message_continue,
    "REASONING_MESSAGE_END": _Checker._reasoning_message_continue,
    "REASONING_END": _Checker._reasoning_end,
    "TOOL_CALL_START": _Checker._tool_start,
    "TOOL_CALL_ARGS": _Checker._tool_continue,
    "TOOL_CALL_END": _Checker._tool_continue,
    "TOOL_CALL_RESULT": _Checker._tool_result,
    "STEP_STARTED": _Checker._step_started,
    "STEP_FINISHED": _Checker._step_finished,
    "RUN_FINISHED": _Checker._run_finished,
    "RUN_ERROR": _Checker._run_error,
    **dict.fromkeys(_PASS, _Checker._pass),
}
