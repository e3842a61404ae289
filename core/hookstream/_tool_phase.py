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
5. the runnable calls run together through the executor, as :class:`~hookstream.ToolCallRequest` data (with
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

import json
import logging
import threading
from collections.abc import Callable, Generator
from typing import Any, Literal

import attrs

from ._accumulate import StepResult
from ._custom import (
    ApprovalRequestedPayload,
    ApprovalRespondedPayload,
    FilePayload,
    ToolCallRepairedPayload,
    ToolInputAvailablePayload,
)
from ._errors import CallbackError, StreamTimeoutError
from ._events import BaseEvent, ToolCallResult
from ._executors import ToolCallRequest, ToolExecutor
from ._loop import PendingApproval, RepairRequest, Resume, approval_id
from ._messages import Message, ToolCallPart, ToolResultPart, tool_output_text
from ._tools import CancellationToken, Tool, needs_approval, validate_input

__all__ = ["ToolPhase", "ToolPhaseSettings", "ToolsOutcome", "error_result"]

# The engine's logger: a failing observer is reported under the same name wherever it runs.
log = logging.getLogger("hookstream.engine")

OutcomeKind = Literal["continue", "interrupt", "direct", "cancelled", "error"]


@attrs.define(slots=True, frozen=True)
class ToolPhaseSettings:
    """The run settings the tool phase reads (from :class:`~hookstream._engine.EngineConfig`).
    ``tool_timeout`` is seconds (``None``: no limit) for tools without their own ``timeout``."""

    executor: ToolExecutor
    tool_timeout: float | None = None
    repair_tool_call: Callable[[RepairRequest], ToolCallPart | None] | None = None
    approve: Callable[[ToolCallPart], bool] | None = None
    on_chunk: Callable[[BaseEvent], None] | None = None


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
    ``cancelled`` and ``failure`` are read between calls, since :meth:`~hookstream._engine.Engine.cancel`
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
        Raises :class:`~hookstream.CallbackError` when ``repair_tool_call`` or ``approve`` raised."""
        cfg = self._settings
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
                aid = approval_id(call.id)
                decided = resume.approval_for(call.id) if resume is not None else None
                if decided is None:
                    yield ApprovalRequestedPayload(call.id, aid, call.name, call.arguments).to_event()
                    if cancelled.is_set():
                        results[call.id] = error_result(call, "not run: the run was cancelled")
                        continue
                    if cfg.approve is None:
                        self.pending_approvals.append(PendingApproval(aid, call))
                        continue
                    try:
                        decided = bool(cfg.approve(call))
                    except Exception as exc:
                        raise CallbackError(f"approve failed: {type(exc).__name__}: {exc}") from exc
                    yield ApprovalRespondedPayload(call.id, aid, decided).to_event()
                if not decided:
                    results[call.id] = ToolResultPart(
                        call.id, call.name, f"Denied: the user did not approve running {call.name!r}.", is_error=True
                    )
                    continue
            runnable.append((call, t))
        if runnable and cancelled.is_set():
            for c, _ in runnable:
                results[c.id] = error_result(c, "not run: the run was cancelled")
            runnable = []
        if runnable:
            self._execute(runnable, results)
        kept = self._pair(step, calls, results, assistant_index)
        yield from self._result_events(step.tool_results)
        if cancelled.is_set():
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

    def _execute(self, runnable: list[tuple[ToolCallPart, Tool]], results: dict[str, ToolResultPart]) -> None:
        """Run the calls through the executor; a tool's failure or time limit becomes its error result."""
        history = tuple(self._messages)
        default_timeout = self._settings.tool_timeout
        requests = [ToolCallRequest.of(tl, c, history, tl.timeout if tl.timeout is not None else default_timeout)
                    for c, tl in runnable]
        ran = self._settings.executor.run(requests, self._token)
        if len(ran) != len(requests):
            raise RuntimeError(f"the tool executor returned {len(ran)} results for {len(requests)} calls")
        for (c, _), r in zip(runnable, ran, strict=True):
            results[c.id] = r

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
        on_chunk = self._settings.on_chunk
        events: list[BaseEvent] = []
        for r in new:
            text = tool_output_text(r.output)
            files = [FilePayload(f).to_value() for f in r.files] or None
            ev = ToolCallResult(f"toolres_{r.tool_call_id}", r.tool_call_id, text, error=text if r.is_error else None,
                                files=files)
            events.append(ev)
            if on_chunk is not None:
                try:
                    on_chunk(ev)
                except Exception:  # an observer must not break the run; its failure is logged
                    log.exception("callback %r failed", getattr(on_chunk, "__name__", on_chunk))
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


def error_result(call: ToolCallPart, problem: str) -> ToolResultPart:
    """The error result of a call that could not run (``Error: <problem>``), so the history stays paired."""
    return ToolResultPart(call.id, call.name, f"Error: {problem}", is_error=True)
