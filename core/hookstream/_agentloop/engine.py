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

Tool calls are decided on the aggregated response of a step (:class:`~hookstream.StepResult`),
never on a single chunk. The loop calls the model again only when the step asked for tools, every one of
them produced a result, no stop condition is met and ``max_steps`` is not reached. A tool call whose
arguments were cut off is never executed. The conversation history always keeps an assistant message
with tool calls followed by a tool message holding a result for each of them (a call that could not
run gets an error result), whatever is streamed; only calls waiting for approval or a client are left
open, and :class:`~hookstream.Resume` closes them.

``CUSTOM`` values are built from the payload classes of :mod:`hookstream._custom` (camelCase keys, as
the AG-UI events are serialised; read them back with :func:`~hookstream.events.parse_custom`):

* ``tool-call-repaired``: ``{"toolCallId", "toolName", "input"}``, the call as ``repair_tool_call``
  returned it (same id as the streamed call; name and parsed arguments replace the streamed ones).
* ``approval-requested``: ``{"toolCallId", "approvalId", "toolName", "input"}``.
* ``approval-responded``: ``{"toolCallId", "approvalId", "approved"}`` when ``approve`` decided; a denied
  call then gets an error ``TOOL_CALL_RESULT``.
* ``tool-input-available``: ``{"toolCallId", "toolName", "input"}`` for a client tool (no function).
* ``loop-stopped``: ``{"stoppedBy", "steps", "maxSteps"}`` just before ``RUN_FINISHED`` when ``max_steps``
  (``stoppedBy: "max_steps"``) or a stop condition (``"stop_condition"``) ended a loop whose last step's
  tools ran and wanted another model call; also kept as :attr:`RunResult.stopped_by`.

A step whose model call finished with outcome ``interrupt`` (a remote AG-UI agent, the ``agui`` provider,
waiting for an approval: ``StepResult.interrupts``) ends the run with outcome ``interrupt`` and those
interrupts (``pending_approvals`` for approval interrupts naming a tool call), or, with ``approve``, asks it
and continues: the next model call carries the answers as AG-UI resume entries (``ModelRequest.resume``).
A ``Resume`` whose answers name no pending tool call of the conversation is sent the same way.

With ``chat(..., output=SPEC)`` a step's output text (content deltas, or the arguments of the forced
output tool) also feeds a :class:`~hookstream._agentloop.partial_output.OutputTracker`; what became known in a delta
follows it as one ``STATE_DELTA`` (JSON Patch ``add`` under ``/output``). A step that answers without
other tool calls (or with the output tool) ends the run: the output is validated and structured
(``RunResult.output``), or the run fails with ``output_invalid``, or, with ``output_retries`` left, the
problems go back to the model and the loop calls it again.

The step loop lives here; the tool phase of a step (validate, repair, approve, run, pair the history)
is :mod:`hookstream._agentloop.tool_phase`. A step's events go through one :class:`_StepOutput`, which streams them
or, with ``stream_tool_call_responses=False``, holds them until the step turns out to be the last one.

With a :class:`~hookstream.FallbackModel` (``hookstream._stream.fallback``) a step's model call may be made
several times: an entry that fails with a fallible error (429, 5xx, an in-stream overload, a connect
error, a first-event timeout; after the call's own retries) before any event of the step reached the
caller is replaced by the next entry, with the same request. The failed attempts' events are dropped
(observers still see their model calls fail); ``StepResult.provider`` names the entry that answered and
``StepResult.fallbacks`` the ones that failed. After content, the step ends with the error as without a
fallback, and the ``RUN_ERROR`` message says no fallback happens after content.

A consumer that stops iterating (``break``, ``close()``) aborts the run exactly like :meth:`Engine.cancel`:
the open step is closed and recorded, text and tool calls received so far stay in the history, memory is
saved and ``hookstream_run_end`` (the callbacks' ``on_finish``) is called once.

Thread safety: :class:`Engine` runs on the thread that iterates it; :meth:`Engine.cancel` may be called
from any thread (the watchdog thread uses the same path for time limits).
"""

from __future__ import annotations

import json
import logging
import operator
import threading
import uuid
from collections.abc import Callable, Generator, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast

import attrs

from .._aliases import resolve_alias
from .._custom import LoopStoppedPayload, MessageAddedPayload, StoppedBy, ToolCallsUnansweredPayload
from .._errors import (
    CallbackError,
    HookstreamError,
    OutputValidationError,
    PluginError,
    ProviderError,
    ResumeError,
    SteeringLimitError,
    StreamTimeoutError,
)
from .._events import (
    BaseEvent,
    Interrupt,
    Outcome,
    Raw,
    ReasoningEnd,
    ReasoningMessageEnd,
    ReasoningMessageStart,
    ReasoningStart,
    RunError,
    RunFinished,
    RunStarted,
    StateDelta,
    StepFinished,
    StepStarted,
    TextMessageContent,
    TextMessageEnd,
    TextMessageStart,
    ToolCallArgs,
    ToolCallEnd,
    ToolCallStart,
    Usage,
)
from .._ids import new_id
from .._messages import Message, Part, ToolCallPart, ToolResultPart
from .._prices import priced
from .._stores.history import History
from .._stream.accumulate import StepAccumulator, StepResult
from .._stream.call import CallOptions, ModelCall
from .._stream.fallback import FallbackModel, fallible
from .._stream.provider import CallContext, ModelRequest, Provider
from .executors import ThreadExecutor, ToolExecutor
from .hooks import ModelCallContext, RunContext, RunHooks, StepContext, plugin_failed
from .partial_output import OutputTracker
from .stop import StopCondition
from .structured import ResolvedOutput
from .timeouts import Watchdog
from .tool_phase import ToolPhase, ToolPhaseSettings, ToolsOutcome, error_result
from .tools import LEFT_RUNNING, CancellationToken, Tool

if TYPE_CHECKING:
    from .._settings import RunSettings
from .values import (
    PendingApproval,
    Resume,
    RunResult,
    approval_in_messages,
    reason_in_messages,
)

__all__ = ["Engine", "RunPlan", "RunResult"]

_UNANSWERED = "Error: no result was given for this tool call"

log = logging.getLogger("hookstream.engine")

_NO_CONTINUE = frozenset({"length", "content_filter", "error"})

_R = TypeVar("_R")

MAX_QUEUED_MESSAGES = 64
"""Steering messages (:meth:`Engine.add_message`) one run holds waiting for its next step, by default."""
# Room kept, when a steering message is checked against max_messages, for what the running step adds
# before it is sent: its assistant message and the tool message of its results.
_STEP_REPLY = 2


@attrs.define(slots=True, frozen=True)
class RunPlan:
    """What one run resolved besides its :class:`~hookstream.RunSettings` (which the engine reads as they
    are): the AG-UI ``thread_id`` and ``run_id``, the provider's ``model`` name, ``tools`` by name, the
    ``executor`` and ``stop_when`` conditions built from their names, ``call_options`` (retries and
    transport limits from the settings' timeouts and loop), the ``resume`` it continues, ``resolve_model``
    (``"PROVIDER:MODEL"`` -> provider, for a step that switches model), the run's plugin ``hooks`` (none: no
    cost), the structured ``output`` resolved and the history's ``summarizer``. Built per run, read-only."""

    model: str
    thread_id: str
    run_id: str
    tools: dict[str, Tool] = attrs.Factory(dict)
    executor: ToolExecutor = attrs.Factory(ThreadExecutor)
    stop_when: list[StopCondition] = attrs.Factory(list)
    call_options: CallOptions = attrs.Factory(lambda: CallOptions(max_retries=2))
    resume: Resume | None = None
    resolve_model: Callable[[str], Provider] | None = None
    hooks: RunHooks | None = None
    output: ResolvedOutput | None = None
    summarizer: Callable[[list[Message]], str] | None = None



def _step_finished(step_name: str, step: StepResult) -> StepFinished:
    """``STEP_FINISHED`` carrying what the step's model call reported (response id, model version,
    usage, normalised finish reason), for AG-UI clients that show per-step details, and in ``metadata``
    ``{"hookstream": {"provider": "NAME:MODEL"}}`` the model that was asked (with a FallbackModel, the
    entry that answered)."""
    metadata = {"hookstream": {"provider": step.provider}} if step.provider else None
    return StepFinished(step_name, response_id=step.response_id, model=step.model, usage=step.usage,
                        finish_reason=step.finish_reason, metadata=metadata)


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
        name, opening, ident_of = kind
        ident = ident_of(ev)
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


_MESSAGE_ID: Callable[[Any], str] = operator.attrgetter("message_id")
_TOOL_CALL_ID: Callable[[Any], str] = operator.attrgetter("tool_call_id")
# event class -> (which list, opens or closes, the block id's attribute)
_TRACKED: dict[type, tuple[str, bool, Callable[[Any], str]]] = {
    TextMessageStart: ("text", True, _MESSAGE_ID),
    TextMessageEnd: ("text", False, _MESSAGE_ID),
    ReasoningStart: ("reasoning", True, _MESSAGE_ID),
    ReasoningEnd: ("reasoning", False, _MESSAGE_ID),
    ReasoningMessageStart: ("reasoning_messages", True, _MESSAGE_ID),
    ReasoningMessageEnd: ("reasoning_messages", False, _MESSAGE_ID),
    ToolCallStart: ("tools", True, _TOOL_CALL_ID),
    ToolCallEnd: ("tools", False, _TOOL_CALL_ID),
}


def _track_output(
    ev: BaseEvent, t: type, tracker: OutputTracker | None, name: str, tools: dict[str, Tool]
) -> tuple[OutputTracker | None, list[dict[str, Any]]]:
    """Feed one event of a step to the structured-output tracker: text deltas (native form) or the
    arguments of the forced output tool call (tool form, which replaces a text tracker: text before a
    tool call is a preamble, not the output). Returns the tracker and the JSON Patch operations."""
    if t is TextMessageContent:
        if tracker is None:
            tracker = OutputTracker("text")
        if tracker.source == "text":
            return tracker, tracker.feed(cast("TextMessageContent", ev).delta)
    elif t is ToolCallStart:
        start = cast("ToolCallStart", ev)
        if start.tool_call_name == name and name not in tools:
            return OutputTracker(start.tool_call_id), []
    elif t is ToolCallArgs:
        args = cast("ToolCallArgs", ev)
        if tracker is not None and tracker.source == args.tool_call_id:
            return tracker, tracker.feed(args.delta)
    return tracker, []


def _notify(on_chunk: Callable[[BaseEvent], None], ev: BaseEvent) -> None:
    try:
        on_chunk(ev)
    except Exception:  # a callback must not break the run; its failure is logged
        log.exception("on_chunk failed")


def _discard(items: list[str], item: str) -> None:
    if item in items:
        items.remove(item)


@attrs.define(slots=True)
class _Step:
    """Resolved settings of one model call."""

    provider: Provider
    request: ModelRequest
    tools: dict[str, Tool]
    events: Sequence[BaseEvent] = ()  # what run plugins emitted at step start (StepContext.emit)


class _StepOutput:
    """Where the events of one step go: yielded at once, or held (``stream_tool_call_responses=False``)
    until the step turns out to end the run (:meth:`release`). The held events of a step the loop continues
    after are dropped with the step's output."""

    __slots__ = ("held",)

    def __init__(self, hold: bool) -> None:
        # The hot path of a step reads ``held`` directly: one identity test per event.
        self.held: list[BaseEvent] | None = [] if hold else None

    def emit(self, events: Sequence[BaseEvent]) -> Iterator[BaseEvent]:
        """Yield ``events``, or hold them."""
        if self.held is None:
            yield from events
        else:
            self.held.extend(events)

    def pipe(self, source: Generator[BaseEvent, None, _R]) -> Generator[BaseEvent, None, _R]:
        """:meth:`emit` each event of ``source`` as it comes; return what ``source`` returns."""
        if self.held is None:
            return (yield from source)
        held = self.held
        while True:
            try:
                held.append(next(source))
            except StopIteration as done:
                return cast("_R", done.value)

    def release(self) -> Iterator[BaseEvent]:
        """Yield the held events and stop holding: the run ends with this step, so the consumer sees it."""
        held, self.held = self.held, None
        if held:
            yield from held


class _Call:
    """The model call of one attempt, whether made directly (``direct``) or through the run hooks
    (``ctx``, whose ``model_call`` exists once the built-in implementation made one; a plugin that
    answered makes none). What the engine and its watchdog read of it, in one place."""

    __slots__ = ("ctx", "direct")

    def __init__(self, direct: ModelCall | None, ctx: ModelCallContext | None) -> None:
        self.direct = direct
        self.ctx = ctx

    @property
    def model_call(self) -> ModelCall | None:
        return self.direct if self.ctx is None else self.ctx.model_call

    @property
    def exception(self) -> BaseException | None:
        call = self.model_call
        return call.exception if call is not None else None

    @property
    def sent_at(self) -> float | None:
        call = self.model_call
        return call.sent_at if call is not None else None

    @property
    def last_event_at(self) -> float | None:
        call = self.model_call
        return call.last_event_at if call is not None else None

    def abort(self, reason: BaseException | None = None) -> None:
        if self.ctx is not None:
            self.ctx.abort(reason)
        elif self.direct is not None:
            self.direct.abort(reason)


class Engine:
    """Iterate :meth:`events` once for the run's events; read :meth:`result` at any time."""

    def __init__(
        self,
        provider: Provider,
        messages: Sequence[Message],
        settings: RunSettings,
        plan: RunPlan,
        close_provider: bool = False,
    ) -> None:
        self.provider = provider
        self.settings = settings
        self.plan = plan
        self.steps: list[StepResult] = []
        self.usage = Usage()
        self.error: BaseException | None = None
        self.outcome = "running"
        self.pending_approvals: list[PendingApproval] = []
        self.pending_tool_calls: list[ToolCallPart] = []
        self.direct_result: Any = None
        self.resumed_results: list[ToolResultPart] = []
        # AG-UI resume entries for the provider's next call: answers to the interrupts its last call ended
        # with (a remote agent's approval), sent once as ModelRequest.resume.
        self._remote_resume: list[dict[str, Any]] | None = None
        # Providers this run created (a "provider:model" string, a model switch in prepare_step) are
        # closed at its end; a provider object the caller built keeps its connection pool.
        self._owned: list[Provider] = [provider] if close_provider else []
        self.stopped_by: str | None = None
        self.output: Any = None
        self._output_retries_left = settings.loop.output_retries
        self._tracker: OutputTracker | None = None
        self._cancelled = threading.Event()
        self._failure: StreamTimeoutError | None = None
        self._token = CancellationToken()
        self._call: _Call | None = None
        self._watchdog: Watchdog | None = None
        self._lock = threading.Lock()
        self._saved = 0
        self._stored: list[Message] = []  # the thread as loaded, summaries included (History needs them)
        self._ended_fired = False
        # Steering (add_message): messages waiting for the next step boundary, under _lock; once the run
        # has ended, _closed refuses more. The step loop reads ``_inbox`` without the lock (a list's truth
        # value): an empty inbox costs one attribute test per step.
        self._inbox: list[Message] = []
        self._closed = False
        self._run_ctx: RunContext | None = None
        self._start_failed: BaseException | None = None
        resume = plan.resume
        if resume is not None and resume.messages is None and settings.memory is not None:
            # A resume with nothing but the thread: the interrupted run saved its pending calls there.
            stored, _ = History.all().apply(settings.memory.load(plan.thread_id))
            self.messages: list[Message] = [*stored, *messages]
            self._saved = len(stored)
        elif resume is not None:
            self.messages = list(resume.messages if resume.messages is not None else messages)
        elif settings.memory is not None:
            # Summaries a History policy saved are not conversation: History.apply drops them (or sends
            # the one that covers what the window leaves out, at the start).
            self._stored = settings.memory.load(plan.thread_id)
            history, _ = History.all().apply(self._stored)
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

    def add_message(self, message: Message, *, max_messages: int | None = None,
                    max_queued: int | None = MAX_QUEUED_MESSAGES) -> bool:
        """Queue ``message`` (a user message) for the run from any thread; see
        :meth:`hookstream.ChatStream.add_message`. ``False`` once the run has ended; raises
        :class:`SteeringLimitError` past ``max_queued`` or ``max_messages`` (nothing queued)."""
        with self._lock:
            if self._closed:
                return False
            if max_queued is not None and len(self._inbox) >= max_queued:
                raise SteeringLimitError("max_queued", max_queued)
            # len() of the list the run's thread appends to is atomic: the count is at most one step old,
            # and _STEP_REPLY covers what that step adds.
            if max_messages is not None and len(self.messages) + len(self._inbox) + 1 + _STEP_REPLY > max_messages:
                raise SteeringLimitError("max_messages", max_messages)
            self._inbox.append(message)
            return True

    def _steered(self) -> list[BaseEvent]:
        """Move the queued messages into the conversation (at a step boundary, on the run's thread): one
        ``message-added`` event each."""
        with self._lock:
            added, self._inbox = self._inbox, []
        events: list[BaseEvent] = []
        for m in added:
            if m.id is None:
                m.id = new_id("msg")
            self.messages.append(m)
            events.append(MessageAddedPayload(m.id, m.text).to_event())
        return events

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
    def partial_output(self) -> Any:
        """The structured output of the current model call as far as it has streamed (see
        :attr:`hookstream.ChatStream.partial_output`)."""
        tracker = self._tracker
        return tracker.value if tracker is not None else None

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def result(self) -> RunResult:
        outcome = self.outcome if self.outcome != "running" else "incomplete"
        left = [p.tool_call_id for m in self.messages if m.role == "tool" for p in m.tool_results
                if (p.provider_metadata or {}).get("hookstream", {}).get(LEFT_RUNNING)]
        with self._lock:
            unsent = list(self._inbox)
        return RunResult(
            list(self.steps), list(self.messages), self.usage, outcome, self.error,
            list(self.pending_approvals), list(self.pending_tool_calls), self.direct_result,
            list(self.resumed_results), self.stopped_by, self.output, left, unsent,
        )

    # -- the loop -------------------------------------------------------------------------------
    def events(self) -> Iterator[BaseEvent]:
        """The run's AG-UI events (run form of :func:`hookstream.testing.check_events`)."""
        cfg = self.plan
        self._watchdog = Watchdog(self.settings.timeouts, lambda: self._call, self._timed_out).start()
        run = self._guarded()
        # Run hooks: the run's steps go on inside the run's own context (see hookstream._agentloop.hooks).
        hooks = cfg.hooks
        if hooks is not None:
            self._run_ctx = RunContext(cfg.thread_id, cfg.run_id, self.provider.name, cfg.model, self.messages,
                                       self.settings, self.settings.loop.parent_run_id, resume=cfg.resume,
                                       principal=self.settings.loop.principal)
            try:
                hooks.start_run(self._run_ctx)
            except Exception as exc:  # reported as the run's RUN_ERROR by _run
                self._start_failed = exc
            run = hooks.wrap(run)
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
            if self._watchdog is not None:
                self._watchdog.stop()
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
            if hooks is not None:
                hooks.end_run(self.result())

    def _guarded(self) -> Iterator[BaseEvent]:
        yield RunStarted(self.plan.thread_id, self.plan.run_id, parent_run_id=self.settings.loop.parent_run_id)
        try:
            yield from self._run()
        except HookstreamError as exc:
            yield from self._fail(exc)
        except Exception as exc:  # a bug must still end the run with RUN_ERROR, never a traceback
            log.exception("engine failed")
            yield from self._fail(exc)

    def _run(self) -> Iterator[BaseEvent]:
        cfg = self.plan
        if self._start_failed is not None:
            exc = self._start_failed
            raise PluginError(f"a run plugin failed in hookstream_run_start: {type(exc).__name__}: {exc}")
        resume = cfg.resume
        history = self.settings.history
        if resume is None and self.settings.memory is not None and history is not None and history.kind != "all":
            self._apply_history()
        # Calls in the middle of the history with no result get one, whichever way the run started.
        yield from self._answer_unanswered()
        if resume is None:
            resume = self._resume_in_messages()
        if resume is not None:
            resume = self._split_resume(resume)
        if resume is not None:
            kind = yield from self._resume(resume)
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
        steered = self._steered() if self._inbox else []
        plan = self._plan(number)
        attempts = self._attempts(plan)
        output = _StepOutput(hold=not self.settings.loop.stream_tool_call_responses)
        step_name = f"step-{number}"
        yield from output.emit([*steered, StepStarted(step_name)])
        if plan.events:
            yield from output.emit(plan.events)
        tried: list[str] = []
        # One model call per attempt; a FallbackModel gives several (hookstream._stream.fallback): a fallible
        # failure before any content of the step hands the same request to the next model.
        for index, (provider, request) in enumerate(attempts):
            acc, blocks = StepAccumulator(number), _OpenBlocks()
            call, source = self._open_call(number, provider, request)
            failed = yield from self._stream_call(call, source, acc, blocks, output, plan,
                                                  last=index + 1 == len(attempts))
            if failed is None:
                break
            if not self._fall_back(call, failed, attempts, index, tried):
                acc.add(failed)  # not a failure another model would fix: the step ends with it
                break
        step = self._record_step(acc, provider, request, tried)
        if self._cancelled.is_set():
            return (yield from self._step_cancelled(step, step_name, blocks, output))
        if step.error is not None:
            return (yield from self._step_failed(step, call, attempts, index, output))
        yield from output.emit([_step_finished(step_name, step)])
        self.messages.append(step.message)
        return (yield from self._after_model(step, plan, output, number))

    def _stream_call(
        self, call: _Call, source: Iterator[BaseEvent], acc: StepAccumulator, blocks: _OpenBlocks,
        output: _StepOutput, plan: _Step, last: bool,
    ) -> Generator[BaseEvent, None, RunError | None]:
        """Stream one model call's events into the step; returns the ``RUN_ERROR`` it failed with before
        any content when another model may still be tried (``None`` otherwise)."""
        cfg = self.plan
        with self._lock:
            self._call = call
        if self._cancelled.is_set():
            call.abort()
        elif self._failure is not None:
            call.abort(self._failure)
        on_chunk = self.settings.callbacks.on_chunk
        held = output.held
        drop_raw = not self.settings.loop.include_raw
        fmt = cfg.output.format if cfg.output is not None else None
        tracker: OutputTracker | None = None
        self._tracker = None  # a retried answer starts from nothing
        content = False  # an event of this call reached the caller: no fallback any more
        failed: RunError | None = None
        add_text = acc.add_text
        plain = on_chunk is None and held is None and fmt is None  # text needs no per-event check but its class
        try:
            # Hot path: one type() and a few identity tests per event; nothing locked, nothing timed.
            for ev in source:
                if type(ev) is TextMessageContent and plain:
                    # The bulk of a stream: folded into the step and passed on; acc.add would return it
                    # unchanged, and blocks.see, Raw and the structured-output tracker do not concern it.
                    add_text(ev)
                    content = True
                    yield ev
                    continue
                t = type(ev)
                if t is RunStarted:
                    continue
                if t is RunError and not content and not last:
                    failed = cast("RunError", ev)  # maybe the next model's turn: decided by the caller
                    break
                ev = acc.add(ev)  # a TOOL_CALL_END comes back with the call's text, for consumers to share
                if t is RunFinished or t is RunError:
                    break
                if t is Raw and drop_raw:
                    continue  # counted by the accumulator (StepResult.unknown_events)
                content = True
                blocks.see(ev)
                if on_chunk is not None:
                    _notify(on_chunk, ev)
                if held is None:
                    yield ev
                else:
                    held.append(ev)
                if fmt is not None:
                    tracker = yield from self._track(ev, t, tracker, fmt.name, plan.tools, output)
        except Exception as exc:
            if call.ctx is None:
                raise
            acc.add(plugin_failed(exc))  # a run plugin's iterator raised: the step ends with plugin_error
        finally:
            with self._lock:
                self._call = None
            # A plugin may have ended the step before the HTTP call ended: closing its iterator closes the
            # call's (a generator closed mid-read aborts its request).
            close = getattr(source, "close", None)
            if close is not None:
                close()
        return failed

    def _track(
        self, ev: BaseEvent, t: type, tracker: OutputTracker | None, name: str, tools: dict[str, Tool],
        output: _StepOutput,
    ) -> Generator[BaseEvent, None, OutputTracker | None]:
        """Feed one event to the structured-output tracker; emit the ``STATE_DELTA`` it gives."""
        tracker, ops = _track_output(ev, t, tracker, name, tools)
        self._tracker = tracker
        if ops:
            yield from output.emit([StateDelta(ops)])
        return tracker

    def _fall_back(self, call: _Call, failed: RunError, attempts: list[tuple[Provider, ModelRequest]], index: int,
                   tried: list[str]) -> bool:
        """Whether the step goes on to the next model after attempt ``index`` failed before content
        (``tried`` gains the failed model's label)."""
        if not self._may_fall_back(call, failed):
            return False
        provider, request = attempts[index]
        tried.append(provider.label(request.model))
        following = attempts[index + 1][0].label(attempts[index + 1][1].model)
        log.warning("model %s failed before any content (%s: %s); trying %s", tried[-1], failed.code,
                    failed.message, following)
        return True

    def _record_step(self, acc: StepAccumulator, provider: Provider, request: ModelRequest,
                     tried: list[str]) -> StepResult:
        step = acc.finish()
        step.provider = provider.label(request.model)
        step.fallbacks = tried
        step.usage = priced(step.usage, provider.priced_as, step.model, request.model)  # Usage.cost (_prices)
        self.steps.append(step)
        if step.usage is not None:
            self.usage = self.usage + step.usage
        return step

    def _step_cancelled(self, step: StepResult, step_name: str, blocks: _OpenBlocks,
                        output: _StepOutput) -> Generator[BaseEvent, None, str]:
        yield from output.emit([*blocks.close(), StepFinished(step_name)])
        yield from output.release()
        self._keep_partial(step, "the run was cancelled")
        self._step_end(step)
        yield from self._finish("cancelled")
        return "cancelled"

    def _step_failed(self, step: StepResult, call: _Call, attempts: list[tuple[Provider, ModelRequest]],
                     index: int, output: _StepOutput) -> Generator[BaseEvent, None, str]:
        yield from output.release()
        self._keep_partial(step, "the model call failed")
        self._step_end(step)
        assert step.error is not None
        code, message = step.error
        exc = self._failure or call.exception or ProviderError(message, error_type=code)
        if index + 1 < len(attempts) and isinstance(exc, HookstreamError) and fallible(exc, code, message):
            # Content had streamed (else the next model would have been tried): say why it was not.
            following = attempts[index + 1][0].label(attempts[index + 1][1].model)
            exc.message += f" (not retried on {following}: no fallback once the step has streamed content)"
            exc.args = (exc.message, *exc.args[1:])
        yield from self._fail(exc, code=code)
        return "error"

    def _after_model(self, step: StepResult, plan: _Step, output: _StepOutput,
                     number: int) -> Generator[BaseEvent, None, str]:
        """What a step that answered does next: the structured output, a remote interrupt, the end of the
        run, or its tools (and then the next step, or a stop)."""
        cfg = self.plan
        if cfg.output is not None:
            out_call = next((c for c in step.tool_calls if c.name == cfg.output.format.name
                             and c.name not in plan.tools), None)
            if out_call is not None or not step.tool_calls:
                return (yield from self._structured(step, out_call, output))
        if step.interrupts is not None:
            return (yield from self._remote_interrupt(step, output, number))
        if not step.tool_calls or step.finish_reason in _NO_CONTINUE:
            if step.tool_calls:
                # Cut off (length, content filter): the calls are not run; error results keep history paired.
                self._close_unrun(step, f"the response ended with finish reason {step.finish_reason!r}")
            self._step_end(step)
            if self._inbox and not self._stop_now(number):
                return "continue"  # a steering message came before the end: one more step carries it
            yield from output.release()
            yield from self._finish("success")
            return "done"
        assistant_index = len(self.messages) - 1
        out = yield from output.pipe(self._tool_phase().run(step, step.tool_calls, plan.tools, None, assistant_index))
        self._settle(out, assistant_index)
        self._step_end(step)
        if out.kind == "continue":
            return (yield from self._continue_or_stop(output, number))
        yield from output.release()
        return (yield from self._conclude(out))

    def _continue_or_stop(self, output: _StepOutput, number: int) -> Generator[BaseEvent, None, str]:
        stop = self._stop_now(number)
        if not stop:
            return "continue"  # the held events of a tool-call step are dropped with ``output``
        self.stopped_by = stop
        yield from output.release()
        # Said on the stream: a run cut short by a limit must not look like a finished answer.
        yield LoopStoppedPayload(stop, number, self.settings.max_steps).to_event()
        yield from self._finish("success")
        return "done"

    def _open_call(self, number: int, provider: Provider, request: ModelRequest) -> tuple[_Call, Iterator[BaseEvent]]:
        """The step's model call and its events: the HTTP call itself, or through the run's
        ``hookstream_model_call`` hooks (which may change the request, wrap the events or answer)."""
        cfg = self.plan
        context = CallContext(cfg.thread_id, cfg.run_id)
        hooks, run = cfg.hooks, self._run_ctx
        if hooks is None or run is None:
            direct = ModelCall(provider, request, context, provider.session, cfg.call_options)
            return _Call(direct, None), iter(direct)
        ctx = ModelCallContext(run, number, provider, request, context, provider.session, cfg.call_options)
        return _Call(None, ctx), hooks.model_call(ctx)

    # -- a remote agent's interrupt -------------------------------------------------------------
    def _remote_interrupt(self, step: StepResult, output: _StepOutput, number: int) -> Generator[BaseEvent, None, str]:
        """End a step whose model call finished with outcome ``interrupt`` (a remote AG-UI agent waiting for
        an approval or an answer). With ``approve`` and only approval interrupts naming a known tool call,
        ask it for each and continue: the next call carries the answers as AG-UI resume entries
        (``ModelRequest.resume``). Otherwise (or when the loop must stop) the run ends with outcome
        ``interrupt``, those interrupts, and ``pending_approvals`` for the approval ones; ``chat(...,
        resume=result.resume({interrupt_id: bool}))`` continues it (:meth:`_split_resume`). Tool calls of
        the step itself are not run (error results keep the history paired)."""
        interrupts = list(step.interrupts or [])
        self._close_unrun(step, "the agent's run ended with an interrupt")
        calls = {c.id: c for c in [*step.tool_calls, *step.interrupt_calls]}
        approvals = [PendingApproval(i.id, calls[i.tool_call_id]) for i in interrupts
                     if i.tool_call_id in calls and "approval" in i.reason.lower()]
        self._step_end(step)
        approve = self.settings.approve
        if approve is not None and interrupts and len(approvals) == len(interrupts) and not self._stop_now(number):
            entries: list[dict[str, Any]] = []
            for p in approvals:
                try:
                    approved = bool(approve(p.call))
                except Exception as exc:
                    raise CallbackError(f"approve failed: {type(exc).__name__}: {exc}") from exc
                entries.append({"interruptId": p.approval_id, "status": "resolved", "payload": {"approved": approved}})
            self._persist()
            self._remote_resume = entries
            return "continue"  # held events of this step are dropped like a tool step's
        self.pending_approvals = approvals
        self._persist()
        yield from output.release()
        yield from self._finish("interrupt", interrupts)
        return "interrupt"

    def _split_resume(self, resume: Resume) -> Resume | None:
        """``resume`` itself while a tool call of the conversation is pending (:meth:`_resume` answers it,
        and rejects an id that names no pending call); else None, and its answers are a remote agent's
        (the run it continues ended with a provider's interrupt): they become AG-UI resume entries for
        the provider's next call (``ModelRequest.resume``), ``{"interruptId", "status": "resolved",
        "payload": {"approved", "reason"?}}`` for an approval, ``payload`` the output for a
        ``tool_outputs`` entry."""
        if self._pending_tail() is not None or not (resume.approvals or resume.tool_outputs):
            return resume
        remote: list[dict[str, Any]] = []
        for key, approved in resume.approvals.items():
            payload: dict[str, Any] = {"approved": bool(approved)}
            if resume.reasons.get(key):
                payload["reason"] = resume.reasons[key]
            remote.append({"interruptId": key, "status": "resolved", "payload": payload})
        for key, value in resume.tool_outputs.items():
            value = value.output if isinstance(value, ToolResultPart) else value
            remote.append({"interruptId": key, "status": "resolved", "payload": value})
        self._remote_resume = remote
        return None

    # -- structured output ----------------------------------------------------------------------
    def _structured(
        self, step: StepResult, out_call: ToolCallPart | None, output: _StepOutput,
    ) -> Generator[BaseEvent, None, str]:
        """End a step that answered with the structured output: validate it, then finish, retry or fail."""
        spec = self.plan.output
        assert spec is not None
        if out_call is None:
            raw = step.text
        elif out_call.arguments_raw is not None:
            raw = out_call.arguments_raw
        else:
            raw = json.dumps(out_call.arguments, ensure_ascii=False)
        attempts = self.settings.loop.output_retries - self._output_retries_left + 1
        try:
            value = spec.finish(raw, attempts)
        except OutputValidationError as exc:
            if self._output_retries_left > 0:
                self._output_retries_left -= 1
                feedback = ("Your answer does not match the required output schema: " + "; ".join(exc.problems)
                            + ". Answer again with JSON that matches the schema.")
                self._pair_output_call(step, out_call, feedback, is_error=True)
                if out_call is None:
                    self.messages.append(Message.user(feedback))
                self._persist()
                self._step_end(step)
                return "continue"  # held events of the invalid answer are dropped like a tool step's
            self._pair_output_call(step, out_call, "Error: " + exc.message, is_error=True)
            self._step_end(step)
            yield from output.release()
            yield from self._fail(exc)
            return "error"
        self.output = value
        self._pair_output_call(step, out_call, "The output was accepted.", is_error=False)
        self._step_end(step)
        yield from output.release()
        yield from self._finish("success")
        return "done"

    def _pair_output_call(self, step: StepResult, out_call: ToolCallPart | None, text: str, is_error: bool) -> None:
        """Keep the history paired: the forced output tool call gets ``text`` as its result, and any other
        call of the same step a "not run" error result (the structured output ends the step)."""
        if not step.tool_calls:
            return
        results = [
            ToolResultPart(c.id, c.name, text, is_error=is_error) if c is out_call
            else error_result(c, "not run: the step answered with the structured output")
            for c in step.tool_calls
        ]
        step.tool_results = results
        self.messages.append(Message("tool", [*results]))

    # -- tools ----------------------------------------------------------------------------------
    def _tool_phase(self) -> ToolPhase:
        cfg, s = self.plan, self.settings
        phase = ToolPhase(
            ToolPhaseSettings(cfg.executor, s.timeouts.tool, s.loop.repair_tool_call, s.approve, s.callbacks.on_chunk,
                              s.context, cfg.run_id, cfg.thread_id, self._add_usage, s.loop.principal),
            self.messages, self._token, self._cancelled, lambda: self._failure,
        )
        # The run's result shows what waits, also when a callback fails halfway through the phase.
        self.pending_approvals, self.pending_tool_calls = phase.pending_approvals, phase.pending_tool_calls
        return phase

    def _add_usage(self, usage: Usage) -> None:
        """Usage a tool reported while it ran (an agent used as a tool), on the run's thread."""
        self.usage = self.usage + usage

    def _settle(self, out: ToolsOutcome, assistant_index: int) -> None:
        """Save the history the tool phase left: up to the assistant message while calls wait (a resume
        continues from there), all of it when every call has a result."""
        if out.kind == "interrupt":
            # The pending calls are saved too: a later run on the thread resumes from the store alone
            # (chat(thread_id=..., memory=..., resume=...)) and never sends them unanswered.
            self._persist()
        elif out.kind in ("continue", "direct"):
            self._persist()
        if out.kind == "direct":
            self.direct_result = out.direct_result

    def _conclude(self, out: ToolsOutcome) -> Generator[BaseEvent, None, str]:
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
            if interrupts:
                yield from self._finish("interrupt", interrupts, pending or None)
            else:  # only client tools wait: the run succeeded and lists them as pending
                yield from self._finish("success", None, pending or None)
        elif out.kind == "direct":
            yield from self._finish("success", result=self.direct_result)
        return out.kind

    def _stop_now(self, number: int) -> StoppedBy | None:
        """Why the loop stops after step ``number`` (``max_steps``, ``stop_condition``), or None."""
        if number >= self.settings.max_steps:
            return "max_steps"
        for cond in self.plan.stop_when:
            try:
                if cond(self.steps):
                    return "stop_condition"
            except Exception as exc:
                raise CallbackError(f"stop condition failed: {type(exc).__name__}: {exc}") from exc
        return None

    def _plan(self, number: int) -> _Step:
        cfg = self.plan
        provider, model, tools, choice = self.provider, cfg.model, cfg.tools, self.settings.tool_choice
        messages = self.messages
        events: Sequence[BaseEvent] = ()
        if cfg.hooks is not None and self._run_ctx is not None:
            step = StepContext(self._run_ctx, number, list(self.steps), list(messages), dict(tools), choice, model)
            cfg.hooks.step_start(step)
            if step.model is not model:
                provider, model = self._model(step.model)
            tools, choice, messages, events = step.tools, step.tool_choice, step.messages, step.events
        request = ModelRequest(
            model=model,
            messages=list(messages),
            tools=[t.spec() for t in tools.values()],
            tool_choice=choice if tools or choice == "none" else None,
            max_tokens=self.settings.max_tokens,
            temperature=self.settings.temperature,
            options=dict(self.settings.options),
            output=cfg.output.format if cfg.output is not None else None,
            thread_id=cfg.thread_id,
            resume=self._remote_resume,
        )
        self._remote_resume = None  # the answers go with this step's call only
        return _Step(provider, request, tools, events)

    def _attempts(self, plan: _Step) -> list[tuple[Provider, ModelRequest]]:
        """The model calls a step may make, in order: one, or one per entry of a FallbackModel (the same
        request with each entry's model name; the first keeps a model name ``prepare_step`` chose)."""
        provider = plan.provider
        if not isinstance(provider, FallbackModel):
            return [(provider, plan.request)]
        entries = provider.resolve(self.plan.resolve_model)
        return [(e, plan.request if i == 0 else attrs.evolve(plan.request, model=e.model))
                for i, e in enumerate(entries)]

    def _may_fall_back(self, call: _Call, failed: RunError) -> bool:
        """Whether the step goes to the next model after ``call`` ended with ``failed`` before any content:
        not when the run was cancelled or a run/step time limit passed; yes for a fallible failure
        (:func:`hookstream._stream.fallback.fallible`). A first-event timeout is forgotten and the watchdog
        re-armed (it stops after reporting one limit), so the next model gets its own first-event time."""
        if self._cancelled.is_set():
            return False
        failure = self._failure
        if failure is not None and failure.limit not in ("first_event", "idle"):
            return False
        if not fallible(failure or call.exception, failed.code, failed.message):
            return False
        if failure is not None:
            self._failure = None
            old = self._watchdog
            watchdog = Watchdog(self.settings.timeouts, lambda: self._call, self._timed_out).start()
            if old is not None:
                watchdog.started_at = old.started_at  # the run limit still counts from the run's start
                old.stop()
            self._watchdog = watchdog
        return True

    def _model(self, model: str | Provider) -> tuple[Provider, str]:
        if isinstance(model, Provider):
            return model, model.model
        if ":" not in model and (resolved := resolve_alias(model)) != model:
            return self._model(resolved)  # an alias of the user's, as get_model reads it
        name, sep, model_name = model.partition(":")
        if sep and name != self.provider.name:
            if self.plan.resolve_model is None:
                raise ValueError(f"cannot switch to model {model!r}: the engine has no resolve_model")
            provider = self.plan.resolve_model(model)
            self._owned.append(provider)
            return provider, provider.model
        return self.provider, model_name if sep else model

    def _apply_history(self) -> None:
        """Send only the window of the stored conversation the history policy allows (a summary of the
        rest written now when the policy asks for one and none covers it; saved in the thread)."""
        cfg = self.plan
        assert self.settings.memory is not None and self.settings.history is not None
        new = self.messages[self._saved:]
        sent, summary = self.settings.history.apply(self._stored, cfg.summarizer)
        if summary is not None:
            self.settings.memory.save(cfg.thread_id, [summary])
        self.messages = [*sent, *new]
        self._saved = len(sent)

    # -- resume ---------------------------------------------------------------------------------
    def _pending_tail(self) -> tuple[int, list[ToolCallPart]] | None:
        """(index of the last assistant message, its calls no tool message answers) when the
        conversation ends with that message and tool messages only, and some call is unanswered."""
        ai = next((i for i in range(len(self.messages) - 1, -1, -1) if self.messages[i].role == "assistant"), None)
        if ai is None or any(m.role != "tool" for m in self.messages[ai + 1:]):
            return None
        done = {r.tool_call_id for m in self.messages[ai + 1:] for r in m.tool_results}
        calls = [c for c in self.messages[ai].tool_calls if c.id not in done]
        return (ai, calls) if calls else None

    def _resume_in_messages(self) -> Resume | None:
        """An interrupted run's conversation passed back without ``resume=`` (an AG-UI or AI SDK client
        posting its messages, approvals answered inside them): the same :class:`Resume` the explicit
        form gives, so both send the provider the same requests. Approvals come from
        :func:`~hookstream._agentloop.values.approval_in_messages`; a call with none stays pending (an approval is
        asked again, a client tool waits again), never sent unanswered."""
        tail = self._pending_tail()
        if tail is None:
            return None
        approvals, reasons = {}, {}
        for call in tail[1]:
            answer = approval_in_messages(call)
            if answer is not None:
                approvals[call.id] = answer
            why = reason_in_messages(call)
            if why is not None:
                reasons[call.id] = why
        return Resume(None, approvals, reasons=reasons)

    def _answer_unanswered(self) -> Iterator[BaseEvent]:
        """Give an error result to every tool call in the middle of the conversation that no tool
        message answers (a later user or assistant message follows it): no provider takes such a
        history (OpenAI and Anthropic answer 400). Says so in a ``tool-calls-unanswered`` event."""
        tail = self._pending_tail()
        last = tail[0] if tail is not None else len(self.messages)
        answered = {r.tool_call_id for m in self.messages for r in m.tool_results}
        fixed: list[str] = []
        rebuilt: list[Message] = []
        owed: list[ToolResultPart] = []  # results to place once the assistant's own tool messages end
        for i, m in enumerate(self.messages):
            if owed and m.role != "tool":
                rebuilt.append(Message("tool", list[Part](owed)))
                owed = []
            rebuilt.append(m)
            if m.role == "assistant" and i < last:
                missing = [c for c in m.tool_calls if c.id not in answered]
                owed = [ToolResultPart(c.id, c.name, _UNANSWERED, is_error=True) for c in missing]
                fixed += [c.id for c in missing]
        if owed:
            rebuilt.append(Message("tool", list[Part](owed)))
        if fixed:
            self.messages = rebuilt
            yield ToolCallsUnansweredPayload(fixed, _UNANSWERED).to_event()

    def _resume(self, resume: Resume) -> Generator[BaseEvent, None, str]:
        cfg = self.plan
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
        # What came before was saved by the interrupted run (an explicit resume); a conversation passed
        # back by a client may hold new messages the store has not seen yet.
        self._saved = ai if self.plan.resume is not None else min(self._saved, ai)
        output = _StepOutput(hold=not self.settings.loop.stream_tool_call_responses)
        # Replay the pending calls so this run's TOOL_CALL_RESULTs refer to calls it announced.
        replay: list[BaseEvent] = [StepStarted("resume")]
        for c in calls:
            replay.append(ToolCallStart(c.id, c.name))
            args = json.dumps(c.arguments if c.arguments is not None else {}, ensure_ascii=False)
            replay.append(ToolCallArgs(c.id, args))
            replay.append(ToolCallEnd(c.id, input=c.arguments))
        replay.append(StepFinished("resume"))
        yield from output.emit(replay)
        holder = StepResult(0, message=assistant, tool_calls=list(calls), finish_reason="tool_calls")
        out = yield from output.pipe(self._tool_phase().run(holder, calls, cfg.tools, resume, ai))
        self._settle(out, ai)
        self.resumed_results = list(holder.tool_results)
        if out.kind == "continue":
            return "continue"
        yield from output.release()
        return (yield from self._conclude(out))

    # -- endings --------------------------------------------------------------------------------
    def _keep_partial(self, step: StepResult, why: str) -> None:
        # Text and complete tool calls that arrived before a failure stay in the conversation.
        if step.message.parts:
            self.messages.append(step.message)
            self._close_unrun(step, why)

    def _close_unrun(self, step: StepResult, why: str) -> None:
        """Give every tool call of the last message that has no result an error result (history paired)."""
        if not step.tool_calls:
            return
        results = [error_result(c, f"not run: {why}") for c in step.tool_calls]
        step.tool_results = results
        self.messages.append(Message("tool", [*results]))

    def _persist(self, upto: int | None = None) -> None:
        store = self.settings.memory
        end = len(self.messages) if upto is None else upto
        if store is None or end <= self._saved:
            return
        for m in self.messages[self._saved:end]:
            if m.id is None:  # saved again after a resume: an id makes that save a no-op
                m.id = f"msg-{uuid.uuid4().hex}"
        store.save(self.plan.thread_id, self.messages[self._saved:end])
        self._saved = end

    def _finish(
        self,
        outcome: Literal["success", "interrupt", "cancelled"],
        interrupts: list[Interrupt] | None = None,
        pending: list[str] | None = None,
        result: Any = None,
    ) -> Iterator[BaseEvent]:
        self.outcome = outcome
        if outcome != "interrupt" and not pending:
            self._persist()
        last = self.steps[-1] if self.steps else None
        yield RunFinished(
            self.plan.thread_id,
            self.plan.run_id,
            usage=self.usage,
            finish_reason=last.finish_reason if last else None,
            raw_finish_reason=last.raw_finish_reason if last else None,
            outcome=Outcome(outcome, interrupts, pending),
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
        with self._lock:
            self._closed = True  # add_message refuses from now on; what is queued is result().unsent_messages

    def _step_end(self, step: StepResult) -> None:
        """``hookstream_step_end`` (``Callbacks.on_step_finish`` is one), once per step, after its tools."""
        hooks, run = self.plan.hooks, self._run_ctx
        if hooks is not None and run is not None:
            hooks.step_end(run, step)

