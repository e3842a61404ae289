"""Guardrails as a run plugin: :class:`Guardrails` runs plain Python callables on a run's input, its
streamed output and its tool calls, after openai-agents' input, output and tool guardrails.

* **Input guards** ``guard(messages: list[Message]) -> verdict`` see the messages of the run's first model
  call, and then, before each later model call is sent, every message that joined the conversation since
  (a steering message, :meth:`hookstream.ChatStream.add_message` or the server's steering route; a tool
  result; anything but the model's own assistant messages): a trip there sends nothing and ends the run
  with ``input_guardrail_tripped``. For the first call, by default (``input_parallel=True``) they run on
  a thread of their own beside that call: the call streams meanwhile, and a trip aborts it wherever it
  is (the HTTP read returns) and ends the run with
  ``RUN_ERROR`` ``input_guardrail_tripped``; what streamed before the trip stays in the run's messages.
  The call's end (``RUN_FINISHED``) waits for the guards, so no tool of the first step runs before they
  passed. ``input_parallel=False`` runs them before the request is sent (a trip sends nothing).
* **Output guards** ``guard(text: str) -> verdict`` see the text the model call streamed so far, after
  every text delta (``output_check="delta"``) or once when the call ends (``"end"``). They also see each
  tool call's arguments (their JSON text, then their string values decoded, one per line) before any of
  them is streamed: a call's ``TOOL_CALL_ARGS`` are held until its ``TOOL_CALL_END`` and checked then
  (a trip ends the step as for text, the call's arguments never sent); and every server tool's result
  (its text) before its ``TOOL_CALL_RESULT`` is streamed or sent to the model: a trip replaces the
  result with an error result (``Error: tool result withheld by guardrail ...``, kept on
  :attr:`Guardrails.refusals`) and the run goes on. With
  ``on_output="error"`` a trip ends the step with ``RUN_ERROR`` ``output_guardrail_tripped``: the delta
  that tripped is not passed on, everything streamed before it is kept. With ``on_output="retry"`` the
  call's events are held until its end and checked whole: a rejected answer is never streamed; the model
  is asked again with the answer and ``feedback`` appended (at most ``max_retries`` times, by the built-in
  HTTP call: a plugin that answers calls, such as a cache, is not asked for the retried request), then
  the step ends with ``output_guardrail_tripped``. Per-delta checks give each guard the whole text so far,
  so a guard that scans all of it costs time quadratic in the answer's length: ``"end"`` suits a costly one.
* **Tool guards** ``guard(name: str, arguments: dict | None) -> verdict`` see each tool call before it
  runs: a trip refuses the call (the tool does not run; the model gets ``Error: ...`` as its result and
  the run goes on) and is kept on :attr:`Guardrails.refusals`.

A verdict is ``None``/``False``/``""`` (pass), ``True`` (trip), a message ``str`` (trip, saying why) or a
:class:`Tripwire` (trip with a message and ``info``). A guard that raises, or returns anything else,
ends the run with ``guardrail_failed`` (a refused call, for a tool guard): nothing passes unchecked.

Hooks (``docs/hooks.rst``): a wrapper of ``hookstream_model_call`` (input and output guards), a
``tryfirst`` ``hookstream_tool_call`` (tool guards) and a wrapper of ``hookstream_tool_call`` (output
guards on tool results). Typed errors: :mod:`hookstream_guardrails.errors`.

Thread safety: a :class:`Guardrails` may be shared by any number of runs and threads; its guards are
called from the run's thread (output), an input-guard thread per run, and the threads that wait for tool
calls (several at once for parallel calls), so guards must be thread-safe.
"""

from __future__ import annotations

import contextvars
import json
import logging
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from typing import Any, Literal

import attrs
from hookstream import Message, ToolResultPart
from hookstream.events import (
    BaseEvent,
    RunError,
    RunFinished,
    RunStarted,
    TextMessageContent,
    ToolCallArgs,
    ToolCallEnd,
)
from hookstream.plugin import ModelCallContext, ToolCallContext, hookimpl

from .errors import GuardrailError, GuardrailFailed, InputGuardrailTripped, OutputGuardrailTripped, ToolGuardrailTripped

__all__ = ["Guardrails", "InputGuard", "OutputGuard", "ToolGuard", "Tripwire"]

log = logging.getLogger("hookstream_guardrails")

InputGuard = Callable[[list[Message]], Any]
"""``guard(messages) -> verdict``: the messages of the run's first model call (system prompt included),
then the messages that joined the conversation before each later call."""
OutputGuard = Callable[[str], Any]
"""``guard(text) -> verdict``: the text the model call has streamed so far (or all of it), a tool call's
arguments, or a server tool's result."""
ToolGuard = Callable[[str, "dict[str, Any] | None"], Any]
"""``guard(tool_name, arguments) -> verdict``: a tool call about to run (``arguments`` the parsed JSON)."""

STATE = "hookstream_guardrails"
"""The key of this plugin's values in ``RunContext.state``."""
DEFAULT_FEEDBACK = "Your previous answer was rejected: {message}. Answer again without that problem."


@attrs.frozen(slots=True)
class Tripwire:
    """A guard's verdict that trips: ``message`` says why (it becomes the error's message or the tool
    call's refusal), ``info`` is anything the guard wants to hand on (on the error's ``info``)."""

    message: str
    info: Any = None


def _name(guard: Callable[..., Any]) -> str:
    return str(getattr(guard, "__name__", None) or type(guard).__name__)


def _verdict(value: Any, guard: Callable[..., Any]) -> Tripwire | None:
    if value is None or value is False or value == "":
        return None
    if value is True:
        return Tripwire(f"guardrail {_name(guard)!r} tripped")
    if isinstance(value, str):
        return Tripwire(value)
    if isinstance(value, Tripwire):
        return value
    raise TypeError(f"a guard returns None, a bool, a str or a Tripwire, not {type(value).__name__}")


def _check(guards: Sequence[Callable[..., Any]], kind: type[GuardrailError], *args: Any,
           **extra: Any) -> GuardrailError | None:
    """The first trip of ``guards(*args)`` as a ``kind`` error, a :class:`GuardrailFailed` for a guard that
    raised, or ``None`` when all passed."""
    for guard in guards:
        try:
            trip = _verdict(guard(*args), guard)
        except Exception as exc:
            log.warning("guard %s failed", _name(guard), exc_info=True)
            return GuardrailFailed(f"guardrail {_name(guard)!r} failed: {type(exc).__name__}: {exc}", _name(guard))
        if trip is not None:
            return kind(trip.message, _name(guard), trip.info, **extra)
    return None


class _InputCheck:
    """The input guards of one run, on their own thread: every model call watching them is aborted when
    they trip; ``wait()`` blocks until they are done."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._calls: list[ModelCallContext] = []
        self.error: GuardrailError | None = None

    def start(self, guards: Sequence[InputGuard], messages: list[Message]) -> None:
        ctx = contextvars.copy_context()  # the guards see the run's context (an OpenTelemetry span)
        thread = threading.Thread(target=ctx.run, args=(self._run, guards, messages),
                                  name="hookstream-input-guardrails", daemon=True)
        thread.start()

    def _run(self, guards: Sequence[InputGuard], messages: list[Message]) -> None:
        self.finish(_check(guards, InputGuardrailTripped, messages))

    def finish(self, error: GuardrailError | None) -> None:
        with self._lock:
            self.error = error
            calls, self._calls = self._calls, []
            self._done.set()
        if error is not None:
            for call in calls:
                call.abort(error)

    def watch(self, call: ModelCallContext) -> None:
        with self._lock:
            if not self._done.is_set():
                self._calls.append(call)
                return
        if self.error is not None:
            call.abort(self.error)

    @property
    def passed(self) -> bool:
        return self._done.is_set() and self.error is None

    def tripped(self) -> GuardrailError | None:
        """The error when the guards are done and tripped (never waits)."""
        return self.error if self._done.is_set() else None

    def wait(self) -> GuardrailError | None:
        self._done.wait()
        return self.error


def _record(call: ModelCallContext, error: GuardrailError) -> None:
    """Make ``error`` the exception the step ends with (``RunResult.error``): the engine takes it from the
    model call (else it makes a ``ProviderError`` of the ``RUN_ERROR``). Needed when the call itself ended
    (well, or with another error) and this plugin ends the step instead; the hooks have no public way to
    say it yet."""
    model_call = call.model_call
    if model_call is not None and not isinstance(model_call.exception, GuardrailError):
        model_call.exception = error  # a tripwire wins over a failure that raced it


def _ended_with(call: ModelCallContext, last: BaseEvent, error: GuardrailError) -> RunError:
    """The ``RUN_ERROR`` that ends a call stopped by ``error``, given the call's own terminal ``last``: the
    call's own when the abort reached it (it carries ``error``'s code), else one made here."""
    if isinstance(last, RunError) and last.code == error.code:
        return last
    _record(call, error)
    return RunError(error.message, code=error.code, usage=getattr(last, "usage", None))


def _args_text(raw: str, parsed: Any = None) -> str:
    """What output guards see of a tool call's arguments: the JSON text, then each string value decoded
    (so an escape such as ``\\u0073`` hides nothing), one per line."""
    if parsed is None:
        try:
            parsed = json.loads(raw) if raw.strip() else None
        except ValueError:
            parsed = None
    strings: list[str] = []
    stack = [parsed]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return "\n".join([raw, *reversed(strings)])


class _HeldArgs:
    """``TOOL_CALL_ARGS`` of the model call's tool calls, held per call until its ``TOOL_CALL_END``."""

    def __init__(self) -> None:
        self.events: dict[str, list[BaseEvent]] = {}
        self.texts: dict[str, str] = {}

    def hold(self, ev: ToolCallArgs) -> None:
        self.events.setdefault(ev.tool_call_id, []).append(ev)
        self.texts[ev.tool_call_id] = self.texts.get(ev.tool_call_id, "") + ev.delta

    def end(self, ev: ToolCallEnd) -> tuple[str, list[BaseEvent]]:
        """The call's arguments as guards see them, and its held events."""
        raw = self.texts.pop(ev.tool_call_id, "")
        held = self.events.pop(ev.tool_call_id, [])
        parsed = getattr(ev, "input", None)
        return _args_text(raw if raw or parsed is None else json.dumps(parsed), parsed), held


def _result_text(result: ToolResultPart) -> str:
    output = result.output
    return output if isinstance(output, str) else json.dumps(output, default=str)


def _terminal(ev: BaseEvent) -> bool:
    return type(ev) is RunFinished or isinstance(ev, RunError)


def _drain(events: Iterator[BaseEvent]) -> BaseEvent | None:
    """The terminal event of an aborted call's remaining events (its content is dropped)."""
    for ev in events:
        if _terminal(ev):
            return ev
    return None


@attrs.define(slots=True, eq=False)
class _Answer:
    """One answer held by ``on_output="retry"``: its events but the last, its text, its terminal event, and
    whether an input guard stopped it."""

    held: list[BaseEvent] = attrs.Factory(list)
    text: str = ""
    last: BaseEvent | None = None
    stopped: bool = False
    args: _HeldArgs = attrs.Factory(_HeldArgs)
    calls: list[str] = attrs.Factory(list)  # each tool call's arguments as output guards see them


@attrs.define(slots=True, eq=False)
class Guardrails:
    """Input, output and tool guards for a run (see the module docstring for what each kind sees and does).

    Use it per run: ``chat(..., plugins=[Guardrails(input=[...], output=[...], tools=[...])])``, or by the
    registered name ``plugins=[("guardrails", {"output": [...]})]``. Raises :class:`ValueError` for an
    unknown ``on_output`` or ``output_check`` or a negative ``max_retries``.
    """

    input: Sequence[InputGuard] = attrs.field(default=(), converter=tuple)
    output: Sequence[OutputGuard] = attrs.field(default=(), converter=tuple)
    tools: Sequence[ToolGuard] = attrs.field(default=(), converter=tuple)
    on_output: Literal["error", "retry"] = attrs.field(default="error",
                                                       validator=attrs.validators.in_(("error", "retry")))
    output_check: Literal["delta", "end"] = attrs.field(default="delta",
                                                        validator=attrs.validators.in_(("delta", "end")))
    input_parallel: bool = True
    max_retries: int = attrs.field(default=1, validator=attrs.validators.ge(0))
    feedback: str = DEFAULT_FEEDBACK
    """The message that asks the model again (``on_output="retry"``); ``{message}`` is the trip's message."""
    refusals: list[ToolGuardrailTripped] = attrs.field(factory=list, init=False)
    """Every tool call a tool guard refused, in the order they were refused (appended from tool threads)."""
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False, repr=False)

    # -- model calls: input and output guards ------------------------------------------------------------
    @hookimpl(wrapper=True, specname="hookstream_model_call")
    def guard_model_call(self, call: ModelCallContext) -> Generator[None, Iterable[BaseEvent], Iterable[BaseEvent]]:
        check = self._input_check(call)
        events = yield
        if check is None and not self.output:
            return events
        if self.on_output == "retry" and self.output:
            return self._held(call, iter(events), check)
        return self._streamed(call, iter(events), check)

    def _input_check(self, call: ModelCallContext) -> _InputCheck | None:
        """The run's input check, started at its first model call; ``None`` without input guards."""
        if not self.input:
            return None
        state = call.run.state.setdefault(STATE, {})
        check: _InputCheck | None = state.get(id(self))
        seen: set[int] = state.setdefault((id(self), "seen"), set())
        messages = list(call.request.messages)
        # A message object the guards have seen is not checked again; the run keeps its messages alive,
        # so an id is not reused while the run goes on.
        new = [m for m in messages if id(m) not in seen and m.role != "assistant"]
        seen.update(id(m) for m in messages)
        if check is not None and new:
            # Messages that joined since the guards last looked (steering, tool results): checked before
            # this call is sent, so a trip sends nothing.
            later = _InputCheck()
            later.finish(_check(self.input, InputGuardrailTripped, new))
            if later.error is not None or check.passed:
                later.watch(call)
                return later
        if check is not None and check.passed:
            return None  # a later call of a run whose input passed: nothing left to watch
        if check is None:
            check = state[id(self)] = _InputCheck()
            if self.input_parallel:
                check.watch(call)
                check.start(self.input, messages)
                return check
            check.finish(_check(self.input, InputGuardrailTripped, messages))
        check.watch(call)
        return check

    def _streamed(self, call: ModelCallContext, events: Iterator[BaseEvent],
                  check: _InputCheck | None) -> Iterator[BaseEvent]:
        """``on_output="error"``: events pass as they come; a trip ends the call with its error."""
        text = ""
        per_delta = self.output_check == "delta" and bool(self.output)
        args = _HeldArgs() if self.output else None
        for ev in events:
            tripped = check.tripped() if check is not None else None
            if tripped is not None:
                yield from self._stop(call, ev, events, tripped)
                return
            error: GuardrailError | None = None
            if args is not None and type(ev) is ToolCallArgs:
                args.hold(ev)  # streamed once the whole call's arguments passed
                continue
            if args is not None and type(ev) is ToolCallEnd:
                seen_args, held = args.end(ev)
                error = _check(self.output, OutputGuardrailTripped, seen_args, text=text)
                if error is None:
                    yield from held
            elif isinstance(ev, TextMessageContent):
                seen = text + ev.delta
                if per_delta:
                    error = _check(self.output, OutputGuardrailTripped, seen, text=text)
                text = seen
            elif type(ev) is RunFinished:
                error = check.wait() if check is not None else None
                if error is None and self.output and not per_delta:
                    error = _check(self.output, OutputGuardrailTripped, text, text=text)
            if error is not None:
                yield from self._stop(call, ev, events, error)
                return
            yield ev
            if _terminal(ev):
                return

    def _stop(self, call: ModelCallContext, ev: BaseEvent, events: Iterator[BaseEvent],
              error: GuardrailError) -> Iterator[BaseEvent]:
        """End the call with ``error``: abort it, drop its remaining content, yield its ``RUN_ERROR``."""
        if type(ev) is RunStarted:
            yield ev
        last = ev if _terminal(ev) else None
        if last is None:
            call.abort(error)
            last = _drain(events)
        yield _ended_with(call, last if last is not None else ev, error)

    def _held(self, call: ModelCallContext, events: Iterator[BaseEvent],
              check: _InputCheck | None) -> Iterator[BaseEvent]:
        """``on_output="retry"``: each answer is held until its end and checked whole; a rejected one is
        dropped and the model asked again with ``feedback``."""
        retries = self.max_retries
        first = True
        while True:
            answer = _Answer()
            yield from self._hold(call, events, check, answer, first)
            first = False
            if answer.stopped:
                return
            passed, error = self._judged(call, answer, check)
            if error is None:
                yield from passed
                return
            assert answer.last is not None
            if retries <= 0:
                yield _ended_with(call, answer.last, error)
                return
            retries -= 1
            events = self._again(call, events, answer.text, error)

    def _hold(self, call: ModelCallContext, events: Iterator[BaseEvent], check: _InputCheck | None,
              answer: _Answer, first: bool) -> Iterator[BaseEvent]:
        """Read one answer into ``answer``; yields only what passes at once: the first call's
        ``RUN_STARTED``, or the end of a call an input guard stopped (``answer.stopped``)."""
        for ev in events:
            tripped = check.tripped() if check is not None else None
            if tripped is not None:
                answer.stopped = True
                yield from self._stop(call, ev, events, tripped)
                return
            if type(ev) is RunStarted:
                if first:
                    yield ev
                continue
            if isinstance(ev, TextMessageContent):
                answer.text += ev.delta
            elif type(ev) is ToolCallArgs:
                answer.args.hold(ev)
            elif type(ev) is ToolCallEnd:
                seen_args, held = answer.args.end(ev)
                answer.calls.append(seen_args)
                answer.held.extend(held)
            if _terminal(ev):
                answer.last = ev
                return
            answer.held.append(ev)

    def _judged(self, call: ModelCallContext, answer: _Answer,
                check: _InputCheck | None) -> tuple[list[BaseEvent], OutputGuardrailTripped | None]:
        """``(events to pass on, None)`` for an answer that passed or a call that failed, ``([], error)``
        for an answer an output guard rejected."""
        last = answer.last
        if last is None or isinstance(last, RunError):
            # The call failed: what it said before stays (as without guards) when the guards pass it.
            passes = _check(self.output, OutputGuardrailTripped, answer.text) is None
            return [*(answer.held if passes else ()), *((last,) if last is not None else ())], None
        error = check.wait() if check is not None else None
        if error is not None:
            return [_ended_with(call, last, error)], None
        rejected = _check(self.output, OutputGuardrailTripped, answer.text, text=answer.text)
        for seen_args in answer.calls:
            if rejected is None:
                rejected = _check(self.output, OutputGuardrailTripped, seen_args, text=answer.text)
        if rejected is None:
            return [*answer.held, last], None
        if isinstance(rejected, OutputGuardrailTripped):
            return [], rejected
        return [_ended_with(call, last, rejected)], None  # a guard that failed: no retry

    def _again(self, call: ModelCallContext, events: Iterator[BaseEvent], text: str,
               error: OutputGuardrailTripped) -> Iterator[BaseEvent]:
        """The events of the call asked again: the rejected answer and the feedback appended to its
        messages, sent by the built-in HTTP call (plugins that answer calls are not asked again)."""
        close = getattr(events, "close", None)
        if close is not None:
            close()  # the rejected call's response ends here (its on_body taps get its body)
        feedback = Message.user(self.feedback.replace("{message}", error.message))
        call.request = attrs.evolve(call.request, messages=[*call.request.messages, Message.assistant(text), feedback])
        log.info("output guard %s rejected the answer; asking again", error.guard)
        return iter(call.open())

    # -- tool calls ---------------------------------------------------------------------------------------
    @hookimpl(wrapper=True, specname="hookstream_tool_call")
    def guard_tool_result(self, call: ToolCallContext) -> Generator[None, ToolResultPart | None,
                                                                    ToolResultPart | None]:
        """Output guards on a server tool's result, before it is streamed or sent to the model."""
        result = yield
        if not self.output or result is None:
            return result
        error = _check(self.output, OutputGuardrailTripped, _result_text(result))
        if error is None:
            return result
        refusal = ToolGuardrailTripped(error.message, error.guard, error.info, tool=call.name, call_id=call.call_id)
        with self._lock:
            self.refusals.append(refusal)
        return call.refuse(f"tool result withheld by guardrail {error.guard!r}: {error.message}")

    @hookimpl(tryfirst=True)
    def hookstream_tool_call(self, call: ToolCallContext) -> ToolResultPart | None:
        if not self.tools:
            return None
        error = _check(self.tools, ToolGuardrailTripped, call.name, call.arguments, tool=call.name,
                       call_id=call.call_id)
        if error is None:
            return None
        if not isinstance(error, ToolGuardrailTripped):  # a guard that failed refuses the call all the same
            error = ToolGuardrailTripped(error.message, error.guard, error.info, tool=call.name, call_id=call.call_id)
        with self._lock:
            self.refusals.append(error)
        return call.refuse(f"tool call refused by guardrail {error.guard!r}: {error.message}")
