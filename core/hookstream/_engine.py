"""The agent loop: model call, tools, model call again, as one AG-UI run.

The engine reframes the adapters' per-call streams into a single run::

    RUN_STARTED
      [STEP_STARTED "resume"  TOOL_CALL_START/ARGS/END of the resumed calls  STEP_FINISHED]
      STEP_STARTED "step-1"  <content of model call 1>  STEP_FINISHED
      CUSTOM tool-call-repaired ...                           (calls repair_tool_call fixed)
      CUSTOM approval-requested [approval-responded] | tool-input-available ...
      TOOL_CALL_RESULT*                                       (tools of step 1, in call order)
      STEP_STARTED "step-2"  ...
    RUN_FINISHED (usage summed; outcome success | interrupt | cancelled)  |  RUN_ERROR

Tool calls are decided on the aggregated response of a step (:class:`~hookstream.accumulate.StepResult`),
never on a single chunk. The loop calls the model again only when the step asked for tools, every one of
them produced a result, no stop condition is met and ``max_steps`` is not reached. A tool call whose
arguments were cut off is never executed. The conversation history always keeps an assistant message
with tool calls followed by a tool message holding a result for each of them (a call that could not
run gets an error result), whatever is streamed; only calls waiting for approval or a client are left
open, and :class:`~hookstream.loop.Resume` closes them.

``CUSTOM`` values (camelCase keys, as the AG-UI events are serialised):

* ``tool-call-repaired``: ``{"toolCallId", "toolName", "input"}``, the call as ``repair_tool_call``
  returned it (same id as the streamed call; name and parsed arguments replace the streamed ones).
* ``approval-requested``: ``{"toolCallId", "approvalId", "toolName", "input"}``.
* ``approval-responded``: ``{"toolCallId", "approvalId", "approved"}`` when ``approve`` decided; a denied
  call then gets an error ``TOOL_CALL_RESULT``.
* ``tool-input-available``: ``{"toolCallId", "toolName", "input"}`` for a client tool (no function).
* ``loop-stopped``: ``{"stoppedBy", "steps", "maxSteps"}`` just before ``RUN_FINISHED`` when ``max_steps``
  (``stoppedBy: "max_steps"``) or a stop condition (``"stop_condition"``) ended a loop whose last step's
  tools ran and wanted another model call; also kept as :attr:`RunResult.stopped_by`.

A consumer that stops iterating (``break``, ``close()``) aborts the run exactly like :meth:`Engine.cancel`:
the open step is closed and recorded, text and tool calls received so far stay in the history, memory is
saved and the callbacks fire once.

Thread safety: :class:`Engine` runs on the thread that iterates it; :meth:`Engine.cancel` may be called
from any thread (the watchdog thread uses the same path for time limits).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import Any

import attrs

from ._accumulate import StepAccumulator, StepResult
from ._call import CallOptions, ModelCall
from ._errors import CallbackError, HookstreamError, ProviderError, ResumeError, StreamTimeoutError
from ._events import (
    BaseEvent,
    Custom,
    Interrupt,
    Outcome,
    ReasoningEnd,
    ReasoningMessageEnd,
    ReasoningMessageStart,
    ReasoningStart,
    RunError,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    TextMessageEnd,
    TextMessageStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
    Usage,
)
from ._executors import ThreadExecutor, ToolExecutor
from ._ids import new_id
from ._loop import (
    Callbacks,
    PendingApproval,
    RepairRequest,
    Resume,
    RunResult,
    StepSettings,
    StepStart,
    approval_id,
)
from ._memory import ConversationStore
from ._messages import Message, ToolCallPart, ToolResultPart, tool_output_text
from ._observe import Observers, RunInfo
from ._provider import CallContext, ModelRequest, Provider
from ._stop import StopCondition
from ._timeouts import Timeouts, Watchdog
from ._tools import CancellationToken, Tool, as_tools, needs_approval, run_tool_guarded, validate_input

__all__ = ["Engine", "EngineConfig", "RunResult"]

log = logging.getLogger("hookstream.engine")

_NO_CONTINUE = frozenset({"length", "content_filter", "error"})


@attrs.define(slots=True)
class EngineConfig:
    """Settings of one run.

    ``max_steps`` bounds model calls (default 10); ``stop_when`` are stop conditions (any one met stops).
    ``approve`` decides approvals synchronously (none: the run ends with an interrupt). ``memory``
    stores the conversation under ``thread_id``. ``stream_tool_call_responses=False`` hides the
    events of steps the loop continues after (only the final answer is streamed). ``timeouts`` are
    seconds (see :class:`~hookstream.timeouts.Timeouts`); ``call_options`` carry retries and transport
    limits. ``observers`` watch the run (:mod:`hookstream._observe`; none: no cost).
    """

    model: str
    tools: dict[str, Tool] = attrs.Factory(dict)
    max_steps: int = 10
    tool_choice: str | dict[str, Any] | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    options: dict[str, Any] = attrs.Factory(dict)
    executor: ToolExecutor = attrs.Factory(ThreadExecutor)
    stop_when: list[StopCondition] = attrs.Factory(list)
    call_options: CallOptions = attrs.Factory(lambda: CallOptions(max_retries=2))
    thread_id: str = attrs.Factory(lambda: new_id("thread"))
    run_id: str = attrs.Factory(lambda: new_id("run"))
    prepare_step: Callable[[StepStart], StepSettings | dict[str, Any] | None] | None = None
    repair_tool_call: Callable[[RepairRequest], ToolCallPart | None] | None = None
    approve: Callable[[ToolCallPart], bool] | None = None
    stream_tool_call_responses: bool = True
    memory: ConversationStore | None = None
    callbacks: Callbacks = attrs.Factory(Callbacks)
    timeouts: Timeouts = attrs.Factory(Timeouts)
    resume: Resume | None = None
    resolve_model: Callable[[str], Provider] | None = None
    observers: list[Any] = attrs.Factory(list)


class _OpenBlocks:
    """Which blocks of the current step are open, so a cancelled step can still be closed cleanly."""

    __slots__ = ("reasoning", "reasoning_messages", "text", "tools")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.reasoning_messages: list[str] = []
        self.tools: list[str] = []

    def see(self, ev: BaseEvent) -> None:
        # One dict lookup per event: content deltas, the bulk of a stream, are not tracked.
        kind = _TRACKED.get(type(ev))
        if kind is None:
            return
        name, opening = kind
        ident = ev.tool_call_id if name == "tools" else ev.message_id  # type: ignore[attr-defined]
        items: list[str] = getattr(self, name)
        if opening:
            items.append(ident)
        else:
            _discard(items, ident)

    def close(self) -> list[BaseEvent]:
        out: list[BaseEvent] = [TextMessageEnd(m) for m in self.text]
        for m in self.reasoning:
            if m in self.reasoning_messages:
                out.append(ReasoningMessageEnd(m))
            out.append(ReasoningEnd(m))
        out.extend(ToolCallEnd(t) for t in self.tools)
        self.text, self.reasoning, self.reasoning_messages, self.tools = [], [], [], []
        return out


_TRACKED: dict[type, tuple[str, bool]] = {
    TextMessageStart: ("text", True),
    TextMessageEnd: ("text", False),
    ReasoningStart: ("reasoning", True),
    ReasoningEnd: ("reasoning", False),
    ReasoningMessageStart: ("reasoning_messages", True),
    ReasoningMessageEnd: ("reasoning_messages", False),
    ToolCallStart: ("tools", True),
    ToolCallEnd: ("tools", False),
}


def _discard(items: list[str], item: str) -> None:
    if item in items:
        items.remove(item)


@attrs.define(slots=True)
class _Step:
    """Resolved settings of one model call."""

    provider: Provider
    request: ModelRequest
    tools: dict[str, Tool]


@attrs.define(slots=True)
class _ToolsOutcome:
    """What the tools phase of a step decided: ``continue``, ``interrupt``, ``direct``, ``cancelled``
    or ``error``."""

    kind: str
    error: BaseException | None = None


class Engine:
    """Iterate :meth:`events` once for the run's events; read :meth:`result` at any time."""

    def __init__(
        self,
        provider: Provider,
        messages: Sequence[Message],
        config: EngineConfig,
        close_provider: bool = False,
    ) -> None:
        self.provider = provider
        self.config = config
        self.steps: list[StepResult] = []
        self.usage = Usage()
        self.error: BaseException | None = None
        self.outcome = "running"
        self.pending_approvals: list[PendingApproval] = []
        self.pending_tool_calls: list[ToolCallPart] = []
        self.direct_result: Any = None
        self.resumed_results: list[ToolResultPart] = []
        # Providers this run created (a "provider:model" string, a model switch in prepare_step) are
        # closed at its end; a provider object the caller built keeps its connection pool.
        self._owned: list[Provider] = [provider] if close_provider else []
        self.stopped_by: str | None = None
        self._cancelled = threading.Event()
        self._failure: StreamTimeoutError | None = None
        self._token = CancellationToken()
        self._call: ModelCall | None = None
        self._lock = threading.Lock()
        self._saved = 0
        self._ended_fired = False
        resume = config.resume
        if resume is not None:
            self.messages: list[Message] = list(resume.messages if resume.messages is not None else messages)
        elif config.memory is not None:
            history = config.memory.load(config.thread_id)
            self.messages = [*history, *messages]
            self._saved = len(history)
        else:
            self.messages = list(messages)

    # -- control --------------------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop the run from any thread: the open HTTP read returns at once (the socket is shut down),
        running tools see their cancellation token set and are abandoned, and the run ends with
        outcome ``cancelled``; every text and tool result that arrived is kept."""
        self._cancelled.set()
        self._token.cancel("cancelled")
        with self._lock:
            call = self._call
        if call is not None:
            call.abort()

    def _timed_out(self, err: StreamTimeoutError) -> None:
        # Watchdog thread: a time limit passed. The run ends with RUN_ERROR naming it.
        if self._failure is None:
            self._failure = err
        if err.limit == "run":
            self._token.cancel("timeout")
        with self._lock:
            call = self._call
        if call is not None:
            call.abort(err)

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def result(self) -> RunResult:
        outcome = self.outcome if self.outcome != "running" else "incomplete"
        return RunResult(
            list(self.steps), list(self.messages), self.usage, outcome, self.error,
            list(self.pending_approvals), list(self.pending_tool_calls), self.direct_result,
            list(self.resumed_results), self.stopped_by,
        )

    # -- the loop -------------------------------------------------------------------------------
    def events(self) -> Iterator[BaseEvent]:
        """The run's AG-UI events (run form of :func:`hookstream.testing.check_events`)."""
        cfg = self.config
        watchdog = Watchdog(cfg.timeouts, lambda: self._call, self._timed_out).start()
        run = self._guarded()
        # Observers: the run's steps go on inside the run's own context (see hookstream._observe).
        observed = Observers.of(cfg.observers)
        if observed is not None:
            observed.start_run(RunInfo(cfg.thread_id, cfg.run_id, self.provider.name, cfg.model))
            run = observed.wrap(run)
        try:
            # Not ``yield from``: closing this generator would close ``run`` mid-step and lose the step.
            for ev in run:  # noqa: UP028
                yield ev
        except GeneratorExit:
            # The consumer stopped iterating (break, close(), garbage collection): an abort, ended the
            # same way as cancel(): the open step is closed and recorded, the history kept and saved, the
            # callbacks fired once. The rest of the run's events are produced but nobody reads them.
            self.cancel()
            for _ in run:
                pass
            raise
        finally:
            watchdog.stop()
            for owned in self._owned:
                owned.close()
            if self.outcome == "running":
                # Only reached when ``run`` could not finish (an exception such as KeyboardInterrupt
                # escaped it): stop the HTTP read and the tools, keep what was recorded.
                self.cancel()
                self.outcome = "cancelled"
                self._persist()
            if not self._ended_fired:
                self._ended()
            if observed is not None:
                observed.end_run(self.result())

    def _guarded(self) -> Iterator[BaseEvent]:
        yield RunStarted(self.config.thread_id, self.config.run_id)
        try:
            yield from self._run()
        except HookstreamError as exc:
            yield from self._fail(exc)
        except Exception as exc:  # a bug must still end the run with RUN_ERROR, never a traceback
            log.exception("engine failed")
            yield from self._fail(exc)

    def _run(self) -> Iterator[BaseEvent]:
        cfg = self.config
        if cfg.resume is not None:
            kind = yield from self._resume(cfg.resume)
            if kind != "continue":
                return
        number = 0
        while True:
            number += 1
            kind = yield from self._step(number)
            if kind != "continue":
                return

    # -- one step -------------------------------------------------------------------------------
    def _step(self, number: int) -> Generator[BaseEvent, None, str]:
        cfg = self.config
        cbs = cfg.callbacks
        plan = self._plan(number)
        buf: list[BaseEvent] | None = None if cfg.stream_tool_call_responses else []
        step_name = f"step-{number}"
        self._observe(cbs.on_step_start, StepStart(number, list(self.steps), plan.request.messages,
                                                   plan.request.model, plan.tools, plan.request.tool_choice))
        started = StepStarted(step_name)
        if buf is None:
            yield started
        else:
            buf.append(started)
        acc = StepAccumulator(number)
        blocks = _OpenBlocks()
        call = ModelCall(plan.provider, plan.request, CallContext(cfg.thread_id, cfg.run_id), plan.provider.session,
                         cfg.call_options)
        with self._lock:
            self._call = call
        if self._cancelled.is_set():
            call.abort()
        elif self._failure is not None:
            call.abort(self._failure)
        on_chunk = cbs.on_chunk
        # Hot path: one type() and a few identity tests per event; nothing locked, nothing timed.
        for ev in call:
            t = type(ev)
            if t is RunStarted:
                continue
            acc.add(ev)
            if t is RunFinished or t is RunError:
                break
            blocks.see(ev)
            if on_chunk is not None:
                try:
                    on_chunk(ev)
                except Exception:
                    log.exception("on_chunk failed")
            if buf is None:
                yield ev
            else:
                buf.append(ev)
        with self._lock:
            self._call = None
        step = acc.finish()
        self.steps.append(step)
        if step.usage is not None:
            self.usage = self.usage + step.usage
        if self._cancelled.is_set():
            closing = [*blocks.close(), StepFinished(step_name)]
            yield from self._emit(buf, closing)
            yield from self._release(buf)
            self._keep_partial(step, "the run was cancelled")
            self._observe(cbs.on_step_finish, step)
            yield from self._finish("cancelled")
            return "cancelled"
        if step.error is not None:
            yield from self._release(buf)
            self._keep_partial(step, "the model call failed")
            self._observe(cbs.on_step_finish, step)
            code, message = step.error
            exc = self._failure or call.exception or ProviderError(message, error_type=code)
            yield from self._fail(exc, code=code)
            return "error"
        ended = StepFinished(step_name)
        if buf is None:
            yield ended
        else:
            buf.append(ended)
        self.messages.append(step.message)
        if not step.tool_calls:
            self._observe(cbs.on_step_finish, step)
            yield from self._release(buf)
            yield from self._finish("success")
            return "done"
        if step.finish_reason in _NO_CONTINUE:
            # Cut off (length, content filter): the calls are not run; error results keep history paired.
            self._close_unrun(step, f"the response ended with finish reason {step.finish_reason!r}")
            self._observe(cbs.on_step_finish, step)
            yield from self._release(buf)
            yield from self._finish("success")
            return "done"
        assistant_index = len(self.messages) - 1
        out = yield from self._tools(step, step.tool_calls, plan.tools, buf, None, assistant_index)
        self._observe(cbs.on_step_finish, step)
        if out.kind == "continue":
            stop = self._stop_now(number)
            if stop:
                self.stopped_by = stop
                yield from self._release(buf)
                # Said on the stream: a run cut short by a limit must not look like a finished answer.
                yield Custom("loop-stopped", {"stoppedBy": stop, "steps": number, "maxSteps": cfg.max_steps})
                yield from self._finish("success")
                return "done"
            return "continue"  # the buffered events of a tool-call step are dropped here
        yield from self._release(buf)
        return (yield from self._conclude(out))

    def _conclude(self, out: _ToolsOutcome) -> Generator[BaseEvent, None, str]:
        if out.kind == "cancelled":
            yield from self._finish("cancelled")
        elif out.kind == "error":
            yield from self._fail(out.error or HookstreamError("tools failed"))
        elif out.kind == "interrupt":
            interrupts = [
                Interrupt(p.approval_id, "tool_approval", message=f"approve running {p.call.name!r}?",
                          tool_call_id=p.call.id)
                for p in self.pending_approvals
            ]
            pending = [c.id for c in self.pending_tool_calls]
            outcome = "interrupt" if interrupts else "success"
            yield from self._finish(outcome, interrupts or None, pending or None)
        elif out.kind == "direct":
            yield from self._finish("success", result=self.direct_result)
        return out.kind

    def _stop_now(self, number: int) -> str | None:
        """Why the loop stops after step ``number`` (``max_steps``, ``stop_condition``), or None."""
        if number >= self.config.max_steps:
            return "max_steps"
        for cond in self.config.stop_when:
            try:
                if cond(self.steps):
                    return "stop_condition"
            except Exception as exc:
                raise CallbackError(f"stop condition failed: {type(exc).__name__}: {exc}") from exc
        return None

    def _plan(self, number: int) -> _Step:
        cfg = self.config
        provider, model, tools, choice = self.provider, cfg.model, cfg.tools, cfg.tool_choice
        messages = self.messages
        if cfg.prepare_step is not None:
            try:
                raw = cfg.prepare_step(StepStart(number, list(self.steps), list(messages), model, dict(tools), choice))
                s = StepSettings.coerce(raw)
            except Exception as exc:
                raise CallbackError(f"prepare_step failed: {type(exc).__name__}: {exc}") from exc
            if s.model is not None:
                provider, model = self._model(s.model)
            new_tools: Any = s.tools
            if new_tools is not None:
                tools = new_tools if isinstance(new_tools, dict) else as_tools(new_tools)
            if s.active_tools is not None:
                wanted = set(s.active_tools)
                tools = {n: t for n, t in tools.items() if n in wanted}
            if s.tool_choice is not None:
                choice = s.tool_choice
            if s.messages is not None:
                messages = list(s.messages)
            if s.system is not None:
                messages = [Message.system(s.system), *(m for m in messages if m.role != "system")]
        request = ModelRequest(
            model=model,
            messages=list(messages),
            tools=[t.spec() for t in tools.values()],
            tool_choice=choice if tools or choice == "none" else None,
            max_tokens=cfg.max_tokens,
            temperature=cfg.temperature,
            options=cfg.options,
        )
        return _Step(provider, request, tools)

    def _model(self, model: str | Provider) -> tuple[Provider, str]:
        if isinstance(model, Provider):
            return model, model.model
        name, sep, model_name = model.partition(":")
        if sep and name != self.provider.name:
            if self.config.resolve_model is None:
                raise ValueError(f"cannot switch to model {model!r}: the engine has no resolve_model")
            provider = self.config.resolve_model(model)
            self._owned.append(provider)
            return provider, provider.model
        return self.provider, model_name if sep else model

    # -- tools ----------------------------------------------------------------------------------
    def _tools(
        self,
        step: StepResult,
        calls: list[ToolCallPart],
        tools: dict[str, Tool],
        buf: list[BaseEvent] | None,
        resume: Resume | None,
        assistant_index: int,
    ) -> Generator[BaseEvent, None, _ToolsOutcome]:
        """Validate, repair, approve and run ``calls``; append their results to the history; emit
        ``TOOL_CALL_RESULT`` (and ``CUSTOM`` for what waits). Returns a :class:`_ToolsOutcome`."""
        cfg = self.config
        results: dict[str, ToolResultPart] = {}
        runnable: list[tuple[ToolCallPart, Tool]] = []
        self.pending_approvals, self.pending_tool_calls = [], []
        for index, original in enumerate(calls):
            if resume is not None:
                given = resume.output_for(original)
                if given is not None:
                    results[original.id] = given
                    continue
            if self._cancelled.is_set():
                # Aborted (cancel() or a consumer that stopped reading): ask nobody, start nothing.
                results[original.id] = _error(original, "not run: the run was cancelled")
                continue
            call, t, problem = self._check(step, index, original, tools)
            if call is not original:
                # The stream announced the unrepaired call: tell the UI what actually runs.
                yield from self._emit(buf, [Custom("tool-call-repaired", {
                    "toolCallId": call.id, "toolName": call.name, "input": call.arguments})])
            if t is None or problem is not None:
                results[call.id] = _error(call, problem or f"unknown tool {call.name!r}")
                continue
            if t.fn is None:
                self.pending_tool_calls.append(call)
                yield from self._emit(buf, [Custom("tool-input-available", {
                    "toolCallId": call.id, "toolName": call.name, "input": call.arguments})])
                continue
            if needs_approval(t, call.arguments):
                aid = approval_id(call.id)
                decided = resume.approval_for(call.id) if resume is not None else None
                if decided is None:
                    yield from self._emit(buf, [Custom("approval-requested", {
                        "toolCallId": call.id, "approvalId": aid, "toolName": call.name, "input": call.arguments})])
                    if self._cancelled.is_set():
                        results[call.id] = _error(call, "not run: the run was cancelled")
                        continue
                    if cfg.approve is None:
                        self.pending_approvals.append(PendingApproval(aid, call))
                        continue
                    try:
                        decided = bool(cfg.approve(call))
                    except Exception as exc:
                        raise CallbackError(f"approve failed: {type(exc).__name__}: {exc}") from exc
                    yield from self._emit(buf, [Custom("approval-responded", {
                        "toolCallId": call.id, "approvalId": aid, "approved": decided})])
                if not decided:
                    results[call.id] = ToolResultPart(
                        call.id, call.name, f"Denied: the user did not approve running {call.name!r}.", is_error=True
                    )
                    continue
            runnable.append((call, t))
        if runnable and self._cancelled.is_set():
            for c, _ in runnable:
                results[c.id] = _error(c, "not run: the run was cancelled")
            runnable = []
        if runnable:
            history = list(self.messages)
            default_timeout = cfg.timeouts.tool
            token = self._token

            def job(c: ToolCallPart, tl: Tool) -> Callable[[], ToolResultPart]:
                limit = tl.timeout if tl.timeout is not None else default_timeout
                return lambda: run_tool_guarded(tl, c, history, token, limit)

            ran = cfg.executor.run([job(c, tl) for c, tl in runnable])
            for (c, _), r in zip(runnable, ran, strict=True):
                results[c.id] = r
        # Results in call order, merged with any the history already holds for this assistant message.
        assistant = self.messages[assistant_index]
        earlier = {r.tool_call_id: r for m in self.messages[assistant_index + 1:] for r in m.tool_results}
        ordered_new = [results[c.id] for c in calls if c.id in results]
        step.tool_results = ordered_new
        merged = [earlier.get(c.id) or results.get(c.id) for c in assistant.tool_calls]
        del self.messages[assistant_index + 1:]
        kept = [r for r in merged if r is not None]
        if kept:
            self.messages.append(Message("tool", [*kept]))
        on_chunk = cfg.callbacks.on_chunk
        result_events: list[BaseEvent] = []
        for r in ordered_new:
            text = tool_output_text(r.output)
            ev = ToolCallResult(f"toolres_{r.tool_call_id}", r.tool_call_id, text, error=text if r.is_error else None)
            result_events.append(ev)
            if on_chunk is not None:
                self._observe(on_chunk, ev)
        yield from self._emit(buf, result_events)
        if self._cancelled.is_set():
            return _ToolsOutcome("cancelled")
        if self._failure is not None:
            return _ToolsOutcome("error", self._failure)
        if self.pending_approvals or self.pending_tool_calls:
            self._persist(upto=assistant_index)
            return _ToolsOutcome("interrupt")
        self._persist()
        called = [tools.get(c.name) for c in assistant.tool_calls]
        if called and all(t is not None and t.return_direct for t in called) and not any(r.is_error for r in kept):
            outputs = [r.output for r in kept]
            self.direct_result = outputs[0] if len(outputs) == 1 else outputs
            return _ToolsOutcome("direct")
        return _ToolsOutcome("continue")

    def _check(
        self, step: StepResult, index: int, call: ToolCallPart, tools: dict[str, Tool]
    ) -> tuple[ToolCallPart, Tool | None, str | None]:
        """(call, tool, problem): the call after an optional repair, its tool, why it cannot run."""
        problem = _problem(call, tools)
        repair = self.config.repair_tool_call
        if problem is None or repair is None:
            return call, tools.get(call.name), problem
        try:
            fixed = repair(RepairRequest(call, problem, dict(tools), list(self.messages)))
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

    # -- resume ---------------------------------------------------------------------------------
    def _resume(self, resume: Resume) -> Generator[BaseEvent, None, str]:
        cfg = self.config
        ai = next((i for i in range(len(self.messages) - 1, -1, -1)
                   if self.messages[i].role == "assistant"), None)
        if ai is None or not self.messages[ai].tool_calls:
            raise ResumeError("nothing to resume: the messages do not end with an assistant message with tool calls")
        assistant = self.messages[ai]
        if any(m.role != "tool" for m in self.messages[ai + 1:]):
            raise ResumeError("nothing to resume: the assistant tool calls are followed by other messages")
        done = {r.tool_call_id for m in self.messages[ai + 1:] for r in m.tool_results}
        calls = [c for c in assistant.tool_calls if c.id not in done]
        known = {c.id for c in calls}
        for key in [*resume.approvals, *resume.tool_outputs]:
            if key not in known and key.removeprefix("approval_") not in known:
                raise ResumeError(f"resume answers {key!r}, which is not a pending tool call of the conversation")
        self._saved = ai  # what came before was saved by the interrupted run
        buf: list[BaseEvent] | None = None if cfg.stream_tool_call_responses else []
        # Replay the pending calls so this run's TOOL_CALL_RESULTs refer to calls it announced.
        replay: list[BaseEvent] = [StepStarted("resume")]
        for c in calls:
            replay.append(ToolCallStart(c.id, c.name))
            args = json.dumps(c.arguments if c.arguments is not None else {}, ensure_ascii=False)
            replay.append(ToolCallArgs(c.id, args))
            replay.append(ToolCallEnd(c.id, input=c.arguments))
        replay.append(StepFinished("resume"))
        yield from self._emit(buf, replay)
        holder = StepResult(0, message=assistant, tool_calls=list(calls), finish_reason="tool_calls")
        out = yield from self._tools(holder, calls, cfg.tools, buf, resume, ai)
        self.resumed_results = list(holder.tool_results)
        if out.kind == "continue":
            return "continue"
        yield from self._release(buf)
        return (yield from self._conclude(out))

    # -- endings --------------------------------------------------------------------------------
    @staticmethod
    def _emit(buf: list[BaseEvent] | None, events: list[BaseEvent]) -> Iterator[BaseEvent]:
        """Yield ``events``, or hold them when the step is buffered (``stream_tool_call_responses=False``)."""
        if buf is None:
            yield from events
        else:
            buf.extend(events)

    @staticmethod
    def _release(buf: list[BaseEvent] | None) -> Iterator[BaseEvent]:
        """Yield a buffered step's events: the run ends with this step, so the caller sees it."""
        if buf:
            yield from buf
            buf.clear()

    def _keep_partial(self, step: StepResult, why: str) -> None:
        # Text and complete tool calls that arrived before a failure stay in the conversation.
        if step.message.parts:
            self.messages.append(step.message)
            self._close_unrun(step, why)

    def _close_unrun(self, step: StepResult, why: str) -> None:
        """Give every tool call of the last message that has no result an error result (history paired)."""
        if not step.tool_calls:
            return
        results = [_error(c, f"not run: {why}") for c in step.tool_calls]
        step.tool_results = results
        self.messages.append(Message("tool", [*results]))

    def _persist(self, upto: int | None = None) -> None:
        store = self.config.memory
        end = len(self.messages) if upto is None else upto
        if store is None or end <= self._saved:
            return
        store.save(self.config.thread_id, self.messages[self._saved:end])
        self._saved = end

    def _finish(
        self,
        outcome: str,
        interrupts: list[Interrupt] | None = None,
        pending: list[str] | None = None,
        result: Any = None,
    ) -> Iterator[BaseEvent]:
        self.outcome = outcome
        if outcome != "interrupt" and not pending:
            self._persist()
        last = self.steps[-1] if self.steps else None
        yield RunFinished(
            self.config.thread_id,
            self.config.run_id,
            usage=self.usage,
            finish_reason=last.finish_reason if last else None,
            raw_finish_reason=last.raw_finish_reason if last else None,
            outcome=Outcome(outcome, interrupts, pending),  # type: ignore[arg-type]
            result=result,
        )
        self._ended()

    def _fail(self, exc: BaseException, code: str | None = None) -> Iterator[BaseEvent]:
        self.outcome = "error"
        self.error = exc
        self._persist()
        if isinstance(exc, HookstreamError):
            message, code = exc.message, code or exc.code
        else:
            message, code = f"{type(exc).__name__}: {exc}", code or "engine_error"
        yield RunError(message, code=code, usage=self.usage)
        self._ended()

    def _ended(self) -> None:
        if self._ended_fired:
            return
        self._ended_fired = True
        cbs = self.config.callbacks
        result = self.result()
        if self.outcome == "error" and self.error is not None:
            self._observe(cbs.on_error, self.error)
        elif self.outcome == "cancelled":
            self._observe(cbs.on_abort, result)
        self._observe(cbs.on_finish, result)

    @staticmethod
    def _observe(fn: Callable[[Any], None] | None, arg: Any) -> None:
        if fn is None:
            return
        try:
            fn(arg)
        except Exception:  # an observer must not break the run; its failure is logged
            log.exception("callback %r failed", getattr(fn, "__name__", fn))


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


def _error(call: ToolCallPart, problem: str) -> ToolResultPart:
    return ToolResultPart(call.id, call.name, f"Error: {problem}", is_error=True)

