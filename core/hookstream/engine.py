"""The agent loop: model call, tools, model call again, as one AG-UI run.

The engine reframes the adapters' per-call streams into a single run::

    RUN_STARTED
      STEP_STARTED  <content of model call 1>  STEP_FINISHED
      TOOL_CALL_RESULT*                                  (tools of step 1, in call order)
      STEP_STARTED  <content of model call 2>  STEP_FINISHED
      ...
    RUN_FINISHED (usage summed, outcome success | cancelled)  |  RUN_ERROR

Tool calls are decided on the aggregated response of a step (:class:`~hookstream.accumulate.StepResult`),
never on a single chunk. The loop goes on only while the step asked for tools, no stop condition is
met and ``max_steps`` is not reached. A tool call whose arguments were cut off is never executed.

Thread safety: :class:`Engine` runs on the thread that iterates it; :meth:`Engine.cancel` may be called
from any thread.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import attrs
import requests

from .accumulate import StepAccumulator, StepResult
from .call import CallOptions, ModelCall
from .events import (
    BaseEvent,
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
    ToolCallEnd,
    ToolCallResult,
    ToolCallStart,
    Usage,
)
from .executors import ThreadExecutor, ToolExecutor
from .messages import Message, ToolResultPart, tool_output_text
from .provider import CallContext, ModelRequest, Provider
from .stop import StopCondition
from .tools import CancellationToken, Tool, ToolContext, run_tool

__all__ = ["Engine", "EngineConfig", "RunResult"]

log = logging.getLogger("hookstream.engine")

_NO_CONTINUE = frozenset({"length", "content_filter", "error"})


@attrs.define(slots=True)
class EngineConfig:
    """Settings of one run. ``max_steps`` bounds model calls; ``stop_when`` are stop conditions."""

    model: str
    tools: dict[str, Tool] = attrs.Factory(dict)
    max_steps: int = 10
    tool_choice: str | dict[str, Any] | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    options: dict[str, Any] = attrs.Factory(dict)
    executor: ToolExecutor = attrs.Factory(ThreadExecutor)
    stop_when: list[StopCondition] = attrs.Factory(list)
    call_options: CallOptions = attrs.Factory(CallOptions)
    thread_id: str = attrs.Factory(lambda: f"thread_{uuid.uuid4().hex[:16]}")
    run_id: str = attrs.Factory(lambda: f"run_{uuid.uuid4().hex[:16]}")


@attrs.define(slots=True)
class RunResult:
    """What a run produced, available even after an error or a cancellation.

    ``text``/``tool_calls``/``finish_reason`` are the last step's; ``usage`` is summed over steps;
    ``messages`` is the whole conversation (input plus every assistant and tool message);
    ``error`` is the typed exception when the run ended with ``RUN_ERROR``; ``outcome`` is
    ``success``, ``cancelled`` or ``error``.
    """

    steps: list[StepResult]
    messages: list[Message]
    usage: Usage
    outcome: str
    error: BaseException | None = None

    @property
    def last_step(self) -> StepResult | None:
        return self.steps[-1] if self.steps else None

    @property
    def text(self) -> str:
        return self.steps[-1].text if self.steps else ""

    @property
    def reasoning(self) -> str | None:
        return self.steps[-1].reasoning if self.steps else None

    @property
    def tool_calls(self) -> list[Any]:
        return self.steps[-1].tool_calls if self.steps else []

    @property
    def finish_reason(self) -> str | None:
        return self.steps[-1].finish_reason if self.steps else None

    @property
    def raw_finish_reason(self) -> str | None:
        return self.steps[-1].raw_finish_reason if self.steps else None

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return [r for s in self.steps for r in s.tool_results]


class _OpenBlocks:
    """Which blocks of the current step are open, so a cancelled step can still be closed cleanly."""

    __slots__ = ("reasoning", "text", "tools")

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.tools: list[str] = []

    def see(self, ev: BaseEvent) -> None:
        t = type(ev)
        if t is TextMessageStart:
            self.text.append(ev.message_id)  # type: ignore[attr-defined]
        elif t is TextMessageEnd:
            _discard(self.text, ev.message_id)  # type: ignore[attr-defined]
        elif t is ReasoningStart:
            self.reasoning.append(ev.message_id)  # type: ignore[attr-defined]
        elif t is ReasoningEnd:
            _discard(self.reasoning, ev.message_id)  # type: ignore[attr-defined]
        elif t is ToolCallStart:
            self.tools.append(ev.tool_call_id)  # type: ignore[attr-defined]
        elif t is ToolCallEnd:
            _discard(self.tools, ev.tool_call_id)  # type: ignore[attr-defined]

    def close(self, reasoning_message_open: set[str]) -> list[BaseEvent]:
        out: list[BaseEvent] = [TextMessageEnd(m) for m in self.text]
        for m in self.reasoning:
            if m in reasoning_message_open:
                out.append(ReasoningMessageEnd(m))
            out.append(ReasoningEnd(m))
        out.extend(ToolCallEnd(t) for t in self.tools)
        self.text, self.reasoning, self.tools = [], [], []
        return out


def _discard(items: list[str], item: str) -> None:
    if item in items:
        items.remove(item)


class Engine:
    """Iterate :meth:`events` once for the run's events; read :meth:`result` at any time."""

    def __init__(
        self,
        provider: Provider,
        messages: Sequence[Message],
        config: EngineConfig,
        session: requests.Session | None = None,
        on_event: Callable[[BaseEvent], None] | None = None,
    ) -> None:
        self.provider = provider
        self.config = config
        self.messages: list[Message] = list(messages)
        self.steps: list[StepResult] = []
        self.usage = Usage()
        self.error: BaseException | None = None
        self.outcome = "running"
        self._session = session or requests.Session()
        self._own_session = session is None
        self._cancelled = threading.Event()
        self._token = CancellationToken()
        self._call: ModelCall | None = None
        self._lock = threading.Lock()

    # -- control --------------------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop the run from any thread: the open HTTP read returns at once, running tools see their
        cancellation token set, and the run ends with outcome ``cancelled``; what arrived is kept."""
        self._cancelled.set()
        self._token.cancel()
        with self._lock:
            call = self._call
        if call is not None:
            call.abort()

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def result(self) -> RunResult:
        outcome = self.outcome if self.outcome != "running" else "incomplete"
        return RunResult(list(self.steps), list(self.messages), self.usage, outcome, self.error)

    # -- the loop -------------------------------------------------------------------------------
    def events(self) -> Iterator[BaseEvent]:
        cfg = self.config
        yield RunStarted(cfg.thread_id, cfg.run_id)
        try:
            yield from self._loop()
        finally:
            if self._own_session:
                self._session.close()

    def _loop(self) -> Iterator[BaseEvent]:
        cfg = self.config
        for number in range(1, cfg.max_steps + 1):
            step_name = f"step-{number}"
            yield StepStarted(step_name)
            acc = StepAccumulator(number)
            blocks = _OpenBlocks()
            reasoning_msgs: set[str] = set()
            call = ModelCall(self.provider, self._request(), CallContext(cfg.thread_id, cfg.run_id), self._session,
                             cfg.call_options)
            with self._lock:
                self._call = call
            if self._cancelled.is_set():
                call.abort()
            for ev in call:
                t = type(ev)
                if t is RunStarted:
                    continue
                acc.add(ev)
                if t is RunFinished or t is RunError:
                    break
                blocks.see(ev)
                if t is ReasoningMessageStart:
                    reasoning_msgs.add(ev.message_id)  # type: ignore[attr-defined]
                elif t is ReasoningMessageEnd:
                    reasoning_msgs.discard(ev.message_id)  # type: ignore[attr-defined]
                yield ev
            with self._lock:
                self._call = None
            step = acc.finish()
            self.steps.append(step)
            if step.usage is not None:
                self.usage = self.usage + step.usage
            if self._cancelled.is_set():
                yield from blocks.close(reasoning_msgs)
                yield StepFinished(step_name)
                self._keep_partial(step)
                yield from self._finish("cancelled")
                return
            if step.error is not None:
                self.error = call.exception
                self._keep_partial(step)
                self.outcome = "error"
                code, message = step.error
                yield RunError(message, code=code, usage=self.usage)
                return
            yield StepFinished(step_name)
            self.messages.append(step.message)
            if not step.tool_calls or step.finish_reason in _NO_CONTINUE:
                break
            yield from self._run_tools(step)
            if self._cancelled.is_set():
                yield from self._finish("cancelled")
                return
            if number >= cfg.max_steps or any(cond(self.steps) for cond in cfg.stop_when):
                break
        yield from self._finish("success")

    def _keep_partial(self, step: StepResult) -> None:
        # Text and complete tool calls that arrived before a failure stay in the conversation.
        if step.message.parts:
            self.messages.append(step.message)

    def _finish(self, outcome: str) -> Iterator[BaseEvent]:
        self.outcome = outcome
        last = self.steps[-1] if self.steps else None
        yield RunFinished(
            self.config.thread_id,
            self.config.run_id,
            usage=self.usage,
            finish_reason=last.finish_reason if last else None,
            raw_finish_reason=last.raw_finish_reason if last else None,
            outcome=Outcome(outcome),  # type: ignore[arg-type]
        )

    def _request(self) -> ModelRequest:
        cfg = self.config
        return ModelRequest(
            model=cfg.model,
            messages=list(self.messages),
            tools=[t.spec() for t in cfg.tools.values()],
            tool_choice=cfg.tool_choice,
            max_tokens=cfg.max_tokens,
            temperature=cfg.temperature,
            options=cfg.options,
        )

    def _run_tools(self, step: StepResult) -> Iterator[BaseEvent]:
        history = list(self.messages)

        def job(call: Any) -> Callable[[], ToolResultPart]:
            ctx = ToolContext(call.id, history, self._token)
            return lambda: run_tool(self.config.tools.get(call.name), call, ctx)

        results: list[ToolResultPart] = self.config.executor.run([job(c) for c in step.tool_calls])
        step.tool_results = results
        self.messages.append(Message("tool", list(results)))
        for r in results:
            text = tool_output_text(r.output)
            yield ToolCallResult(
                f"toolres_{r.tool_call_id}", r.tool_call_id, text, error=text if r.is_error else None
            )

