"""The tool phase of one agent-loop step: what happens between a step's ``STEP_FINISHED`` and the next
model call.

For the tool calls of a step (or the calls a :class:`~hookstream.Resume` answers), in call order:

1. an answer the resume already holds is taken as the result;
2. the call is validated against its tool (known name, arguments a JSON object that fits the schema);
   a call that does not fit goes to ``repair_tool_call`` when there is one (``CUSTOM tool-call-repaired``
   tells the UI what runs instead of what was streamed), else it gets an error result;
3. a client tool (no function) waits for the client (``CUSTOM tool-input-available``);
4. a tool that needs approval asks (``CUSTOM approval-requested``), and either waits (no ``approve``
   callback: an interrupt) or is decided at once (``CUSTOM approval-responded``; denied: error result);
5. the runnable calls run together through the executor, as :class:`~hookstream.plugin.ToolCallRequest` data (with
   the tool's or the run's ``tool`` time limit in seconds) and the run's cancellation token.

Then the results, in call order, become ``TOOL_CALL_RESULT`` events and one tool message that follows the
assistant message, merged with results the history already holds for it, so the history stays paired
(every assistant tool call followed by its result, except calls that wait). A step whose tools all have
``return_direct`` and all succeeded ends the loop with their outputs as the run's result.

:class:`ToolPhase` knows nothing about how the step's events reach the consumer: :meth:`ToolPhase.run` is
a generator of events that returns a :class:`ToolsOutcome`; the engine decides whether they are
streamed now or held (``stream_tool_call_responses=False``), and saves the history.
"""

from __future__ import annotations

import contextvars
import functools
import json
import logging
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any, Literal, cast

import attrs

from .._custom import (
    ApprovalRequestedPayload,
    ApprovalRespondedPayload,
    FilePayload,
    ToolCallRepairedPayload,
    ToolInputAvailablePayload,
)
from .._errors import CallbackError, StreamTimeoutError
from .._events import (
    BaseEvent,
    ReasoningEnd,
    ReasoningMessageEnd,
    ReasoningMessageStart,
    ReasoningStart,
    StepFinished,
    StepStarted,
    SubagentError,
    SubagentFinished,
    SubagentStarted,
    TextMessageEnd,
    TextMessageStart,
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
    Usage,
)
from .._messages import Message, ToolCallPart, ToolResultPart, tool_output_text
from .._principal import Principal
from .._stream.accumulate import StepResult
from .executors import ToolCallRequest, ToolExecutor
from .thread_pool import POOL
from .tools import CancellationToken, Tool, ToolChannel, needs_approval, validate_input
from .values import PendingApproval, RepairRequest, Resume, approval_id

__all__ = ["ToolPhase", "ToolPhaseSettings", "ToolsOutcome", "error_result"]

# The engine's logger: a failing observer is reported under the same name wherever it runs.
log = logging.getLogger("hookstream.engine")

OutcomeKind = Literal["continue", "interrupt", "direct", "cancelled", "error"]


@attrs.define(slots=True, frozen=True)
class ToolPhaseSettings:
    """The run settings the tool phase reads (from the run's :class:`~hookstream.RunSettings` and
    :class:`~hookstream._agentloop.engine.RunPlan`). ``tool_timeout`` is seconds (``None``: no limit) for
    tools without their own ``timeout``."""

    executor: ToolExecutor
    tool_timeout: float | None = None
    repair_tool_call: Callable[[RepairRequest], ToolCallPart | None] | None = None
    approve: Callable[[ToolCallPart], bool] | None = None
    on_chunk: Callable[[BaseEvent], None] | None = None
    context: Any = None
    """The application context (``chat(..., context=obj)``) for tools that take a ``ToolContext``."""
    run_id: str | None = None
    thread_id: str | None = None
    on_usage: Callable[[Usage], None] | None = None
    """With ``run_id`` and ``thread_id``: tools that take a ``ToolContext`` get a
    :class:`~hookstream._agentloop.tools.ToolChannel`; the events they emit are streamed while they run and the
    usage they add goes to ``on_usage`` (the run's usage)."""
    principal: Principal | None = None
    """Who the run is for (``LoopSettings.principal``), for tools that take a ``ToolContext``."""


@attrs.define(slots=True, frozen=True)
class ToolsOutcome:
    """What the tool phase decided.

    ``continue``: every call has a result, call the model again. ``interrupt``: calls wait for approval
    or a client (:attr:`ToolPhase.pending_approvals`, :attr:`ToolPhase.pending_tool_calls`).
    ``direct``: ``return_direct`` tools answered; ``direct_result`` is the output (a list for several
    calls). ``cancelled``: the run was cancelled. ``error``: a time limit passed (``error``).
    """

    kind: OutcomeKind
    error: BaseException | None = None
    direct_result: Any = None


class ToolPhase:
    """The tool calls of one step. Build one per step, then drive :meth:`run`.

    ``messages`` is the run's history (edited in place: the tool message after the assistant message);
    ``cancelled`` and ``failure`` are read between calls, since :meth:`~hookstream._agentloop.engine.Engine.cancel`
    and the watchdog set them from other threads; ``token`` is handed to the running tools.
    :attr:`pending_approvals` and :attr:`pending_tool_calls` fill in as calls start to wait.
    """

    __slots__ = ("_cancelled", "_failure", "_messages", "_settings", "_token",
                 "pending_approvals", "pending_tool_calls")

    def __init__(
        self,
        settings: ToolPhaseSettings,
        messages: list[Message],
        token: CancellationToken,
        cancelled: threading.Event,
        failure: Callable[[], StreamTimeoutError | None],
    ) -> None:
        self._settings = settings
        self._messages = messages
        self._token = token
        self._cancelled = cancelled
        self._failure = failure
        self.pending_approvals: list[PendingApproval] = []
        self.pending_tool_calls: list[ToolCallPart] = []

    def run(
        self,
        step: StepResult,
        calls: list[ToolCallPart],
        tools: dict[str, Tool],
        resume: Resume | None,
        assistant_index: int,
    ) -> Generator[BaseEvent, None, ToolsOutcome]:
        """Validate, repair, approve and run ``calls`` (the tool calls of ``step``, whose assistant message
        is ``messages[assistant_index]``); yield ``CUSTOM`` events for repaired and waiting calls, then the
        ``TOOL_CALL_RESULT`` of each call that got a result, in call order. Sets ``step.tool_results``.
        Raises :class:`~hookstream.errors.CallbackError` when ``repair_tool_call`` or ``approve`` raised."""
        cancelled = self._cancelled
        results: dict[str, ToolResultPart] = {}
        runnable: list[tuple[ToolCallPart, Tool]] = []
        for original in calls:
            if resume is not None:
                given = resume.output_for(original)
                if given is not None:
                    results[original.id] = given
                    continue
            if cancelled.is_set():
                # Aborted (cancel() or a consumer that stopped reading): ask nobody, start nothing.
                results[original.id] = error_result(original, "not run: the run was cancelled")
                continue
            call, t, problem = self._check(step, original, tools)
            if call is not original:
                # The stream announced the unrepaired call: tell the UI what actually runs.
                yield ToolCallRepairedPayload(call.id, call.name, call.arguments).to_event()
            if t is None or problem is not None or call.arguments is None:
                results[call.id] = error_result(call, problem or f"unknown tool {call.name!r}")
                continue
            if t.fn is None:
                self.pending_tool_calls.append(call)
                yield ToolInputAvailablePayload(call.id, call.name, call.arguments).to_event()
                continue
            if needs_approval(t, call.arguments):
                approved = yield from self._approval(call, resume, results)
                if not approved:
                    continue
            runnable.append((call, t))
        if runnable and cancelled.is_set():
            for c, _ in runnable:
                results[c.id] = error_result(c, "not run: the run was cancelled")
            runnable = []
        if runnable:
            yield from self._execute(runnable, results)
        kept = self._pair(step, calls, results, assistant_index)
        yield from self._result_events(step.tool_results)
        return self._outcome(kept, tools, assistant_index)

    def _approval(self, call: ToolCallPart, resume: Resume | None,
                  results: dict[str, ToolResultPart]) -> Generator[BaseEvent, None, bool]:
        """Whether a call that needs approval may run: the resume's answer, else ``approve``'s (the
        approval events yielded), else it waits (pending) or was cancelled; a denial is its error result."""
        aid = approval_id(call.id)
        decided = resume.approval_for(call.id) if resume is not None else None
        if decided is None:
            yield ApprovalRequestedPayload(call.id, aid, call.name, call.arguments or {}).to_event()
            if self._cancelled.is_set():
                results[call.id] = error_result(call, "not run: the run was cancelled")
                return False
            if self._settings.approve is None:
                self.pending_approvals.append(PendingApproval(aid, call))
                return False
            try:
                decided = bool(self._settings.approve(call))
            except Exception as exc:
                raise CallbackError(f"approve failed: {type(exc).__name__}: {exc}") from exc
            yield ApprovalRespondedPayload(call.id, aid, decided).to_event()
        if not decided:
            why = resume.reason_for(call.id) if resume is not None else None
            text = f"Denied: the user did not approve running {call.name!r}."
            results[call.id] = ToolResultPart(
                call.id, call.name, f"{text} Their reason: {why}" if why else text, is_error=True
            )
        return decided

    def _outcome(self, kept: list[ToolResultPart], tools: dict[str, Tool], assistant_index: int) -> ToolsOutcome:
        """How the phase ended: cancelled, a time limit, calls waiting, a direct result, or continue."""
        if self._cancelled.is_set():
            return ToolsOutcome("cancelled")
        failure = self._failure()
        if failure is not None:
            return ToolsOutcome("error", failure)
        if self.pending_approvals or self.pending_tool_calls:
            return ToolsOutcome("interrupt")
        called = [tools.get(c.name) for c in self._messages[assistant_index].tool_calls]
        if called and all(t is not None and t.return_direct for t in called) and not any(r.is_error for r in kept):
            outputs = [r.output for r in kept]
            return ToolsOutcome("direct", direct_result=outputs[0] if len(outputs) == 1 else outputs)
        return ToolsOutcome("continue")

    def _execute(
        self, runnable: list[tuple[ToolCallPart, Tool]], results: dict[str, ToolResultPart]
    ) -> Generator[BaseEvent, None, None]:
        """Run the calls through the executor; a tool's failure or time limit becomes its error result.
        Yields what the tools emit while they run (see :meth:`_run_draining`)."""
        history = tuple(self._messages)
        settings = self._settings
        default_timeout = settings.tool_timeout
        deps = settings.context
        channel = None
        if settings.run_id is not None and settings.thread_id is not None and any(tl.context_param
                                                                                  for _, tl in runnable):
            channel = ToolChannel(settings.run_id, settings.thread_id)
        requests = [ToolCallRequest.of(tl, c, history, tl.timeout if tl.timeout is not None else default_timeout,
                                       deps, channel, settings.principal)
                    for c, tl in runnable]
        if channel is None:
            ran = settings.executor.run(requests, self._token)
        else:
            ran = yield from self._run_draining(requests, channel)
        if len(ran) != len(requests):
            raise RuntimeError(f"the tool executor returned {len(ran)} results for {len(requests)} calls")
        for (c, _), r in zip(runnable, ran, strict=True):
            results[c.id] = r

    def _run_draining(
        self, requests: list[ToolCallRequest], channel: ToolChannel
    ) -> Generator[BaseEvent, None, list[ToolResultPart]]:
        """Run the executor on a helper thread (in a copy of this thread's contextvars context, so the
        run's observers reach it) while this thread, the run's, yields what the tools emit as it comes and
        adds the usage they report. A nested run (``SUBAGENT_STARTED``) still open when the executor is
        done (its tool was abandoned: a cancel, a time limit) gets up to :data:`NESTED_GRACE` seconds to
        end; then its open blocks are closed and it ends with ``SUBAGENT_ERROR`` code ``abandoned``, so
        the run's grammar holds."""
        box: list[Any] = []
        executor, token = self._settings.executor, self._token

        def target() -> None:
            try:
                box.append(executor.run(requests, token))
            except BaseException as exc:  # re-raised on the run's thread
                box.append(exc)
            finally:
                channel.put_marker(_DONE)

        ctx = contextvars.copy_context()
        POOL.submit(functools.partial(ctx.run, target), "hookstream-tool-phase")
        nested = NestedBlocks()
        while True:
            item = channel.get()
            if item is _DONE:
                break
            yield from self._take(item, nested)
        deadline = time.monotonic() + NESTED_GRACE
        while nested.open_runs():
            try:
                item = channel.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                break
            yield from self._take(item, nested)
        channel.close()
        yield from self._emit_all(nested.close_all())
        ran = box[0]
        if isinstance(ran, BaseException):
            raise ran
        return cast("list[ToolResultPart]", ran)

    def _take(self, item: Any, nested: NestedBlocks) -> Iterator[BaseEvent]:
        if isinstance(item, Usage):
            if self._settings.on_usage is not None:
                self._settings.on_usage(item)
        elif isinstance(item, BaseEvent):
            nested.see(item)
            yield from self._emit_all([item])

    def _emit_all(self, events: list[BaseEvent]) -> Iterator[BaseEvent]:
        for ev in events:
            self._notify(ev)
            yield ev

    def _notify(self, ev: BaseEvent) -> None:
        """``on_chunk(ev)``, if set; an observer must not break the run, so its failure is logged."""
        on_chunk = self._settings.on_chunk
        if on_chunk is not None:
            try:
                on_chunk(ev)
            except Exception:
                log.exception("callback %r failed", getattr(on_chunk, "__name__", on_chunk))

    def _pair(
        self, step: StepResult, calls: list[ToolCallPart], results: dict[str, ToolResultPart], assistant_index: int
    ) -> list[ToolResultPart]:
        """Put the results after the assistant message, in call order, merged with the results the history
        already holds for it (a resume answers some calls, an earlier run others). Returns the results the
        tool message now holds."""
        messages = self._messages
        assistant = messages[assistant_index]
        earlier = {r.tool_call_id: r for m in messages[assistant_index + 1:] for r in m.tool_results}
        step.tool_results = [results[c.id] for c in calls if c.id in results]
        merged = [earlier.get(c.id) or results.get(c.id) for c in assistant.tool_calls]
        del messages[assistant_index + 1:]
        kept = [r for r in merged if r is not None]
        if kept:
            messages.append(Message("tool", [*kept]))
        return kept

    def _result_events(self, new: list[ToolResultPart]) -> list[BaseEvent]:
        events: list[BaseEvent] = []
        for r in new:
            text = tool_output_text(r.output)
            files = [FilePayload(f).to_value() for f in r.files] or None
            ev = ToolCallResult(f"toolres_{r.tool_call_id}", r.tool_call_id, text, error=text if r.is_error else None,
                                files=files)
            events.append(ev)
            self._notify(ev)
        return events

    def _check(
        self, step: StepResult, call: ToolCallPart, tools: dict[str, Tool]
    ) -> tuple[ToolCallPart, Tool | None, str | None]:
        """(call, tool, problem): the call after an optional repair, its tool, why it cannot run."""
        problem = _problem(call, tools)
        repair = self._settings.repair_tool_call
        if problem is None or repair is None:
            return call, tools.get(call.name), problem
        try:
            fixed = repair(RepairRequest(call, problem, dict(tools), list(self._messages)))
        except Exception as exc:
            raise CallbackError(f"repair_tool_call failed: {type(exc).__name__}: {exc}") from exc
        if fixed is None:
            return call, tools.get(call.name), problem
        # The repaired call keeps the id the stream announced, so its result pairs with it.
        new = ToolCallPart(
            call.id, fixed.name, fixed.arguments,
            arguments_raw=json.dumps(fixed.arguments) if fixed.arguments is not None else fixed.arguments_raw,
            provider_metadata=call.provider_metadata,
        )
        for container in (step.message.parts, step.tool_calls):
            for i, p in enumerate(container):
                if p is call:
                    container[i] = new
        return new, tools.get(new.name), _problem(new, tools)


def _problem(call: ToolCallPart, tools: dict[str, Tool]) -> str | None:
    t = tools.get(call.name)
    if t is None:
        names = ", ".join(sorted(tools)) or "none"
        return f"unknown tool {call.name!r} (available: {names})"
    if call.arguments is None:
        raw = (call.arguments_raw or "")[:200]
        return f"the arguments for {call.name!r} are not a JSON object: {raw!r}"
    problem = validate_input(t, call.arguments)
    return f"invalid input for {call.name!r}: {problem}" if problem else None


NESTED_GRACE = 5.0
"""Seconds a nested run whose tool was abandoned may take to end before it is closed for it."""

_DONE = object()

_OPENERS: dict[type, tuple[str, Callable[[Any], str]]] = {
    TextMessageStart: ("text", lambda e: e.message_id),
    ReasoningStart: ("reasoning", lambda e: e.message_id),
    ReasoningMessageStart: ("reasoning_message", lambda e: e.message_id),
    ToolCallStart: ("tool", lambda e: e.tool_call_id),
    StepStarted: ("step", lambda e: e.step_name),
}
_CLOSERS: dict[type, tuple[str, Callable[[Any], str]]] = {
    TextMessageEnd: ("text", lambda e: e.message_id),
    ReasoningEnd: ("reasoning", lambda e: e.message_id),
    ReasoningMessageEnd: ("reasoning_message", lambda e: e.message_id),
    ToolCallEnd: ("tool", lambda e: e.tool_call_id),
    StepFinished: ("step", lambda e: e.step_name),
}
# The order blocks are closed in: contents before their containers.
_CLOSE_ORDER: tuple[tuple[str, Callable[[str, str | None], BaseEvent]], ...] = (
    ("text", lambda i, r: TextMessageEnd(i, subagent_run_id=r)),
    ("reasoning_message", lambda i, r: ReasoningMessageEnd(i, subagent_run_id=r)),
    ("reasoning", lambda i, r: ReasoningEnd(i, subagent_run_id=r)),
    ("tool", lambda i, r: ToolCallEnd(i, subagent_run_id=r)),
    ("step", lambda i, r: StepFinished(i, subagent_run_id=r)),
)


class NestedBlocks:
    """What the events tools emitted left open, per subagent run (``None``: the run itself), so a run
    that must stop reading them can close them."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        self.blocks: dict[tuple[str, str | None], list[str]] = {}

    def see(self, ev: BaseEvent) -> None:
        t = type(ev)
        if t is SubagentStarted:
            self.runs.append(cast("SubagentStarted", ev).subagent_run_id)
        elif t is SubagentFinished or t is SubagentError:
            run = cast("SubagentFinished | SubagentError", ev).subagent_run_id
            if run in self.runs:
                self.runs.remove(run)
            for kind, _ in _CLOSE_ORDER:  # its producer closed what it had to
                self.blocks.pop((kind, run), None)
        elif t in _OPENERS:
            kind, ident = _OPENERS[t]
            self.blocks.setdefault((kind, getattr(ev, "subagent_run_id", None)), []).append(ident(ev))
        elif t in _CLOSERS:
            kind, ident = _CLOSERS[t]
            open_ = self.blocks.get((kind, getattr(ev, "subagent_run_id", None)))
            if open_ and ident(ev) in open_:
                open_.remove(ident(ev))

    def open_runs(self) -> bool:
        return bool(self.runs)

    def close_blocks(self, owner: str | None) -> list[BaseEvent]:
        """The end events of the blocks ``owner`` left open (contents first); forgets them."""
        out: list[BaseEvent] = []
        for kind, make in _CLOSE_ORDER:
            for ident in reversed(self.blocks.pop((kind, owner), [])):
                out.append(make(ident, owner))
        return out

    def close_all(self) -> list[BaseEvent]:
        """Close every open block and end every open nested run (``SUBAGENT_ERROR`` ``abandoned``)."""
        out: list[BaseEvent] = []
        owners = {owner for (_, owner) in self.blocks}
        for owner in [*(r for r in reversed(self.runs)), *(o for o in owners if o not in self.runs)]:
            out.extend(self.close_blocks(owner))
            if owner in self.runs:
                out.append(SubagentError(owner, "the agent tool stopped before its run ended", code="abandoned"))
        self.runs = []
        return out


def error_result(call: ToolCallPart, problem: str) -> ToolResultPart:
    """The error result of a call that could not run (``Error: <problem>``), so the history stays paired."""
    return ToolResultPart(call.id, call.name, f"Error: {problem}", is_error=True)
