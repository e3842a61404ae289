"""Run hooks: the values a run plugin sees (:class:`RunContext`, :class:`StepContext`,
:class:`ModelCallContext`, :class:`ToolCallContext`) and :class:`RunHooks`, the pluggy hook relay one
run calls them through.

The hook specs are in :mod:`hookstream._hookspecs`; this module holds the built-in innermost
implementations (the HTTP model call, running the tool), so a plugin's wrapper or ``tryfirst``
implementation goes around or before them exactly as pytest's hook wrappers do.

A run has hooks only when some plugin implements one: :func:`run_hooks` returns ``None`` otherwise and
the engine then calls the model and the tools directly, as before hooks existed (nothing is added per
event or per call). With hooks, the engine runs every step of the run inside one ``contextvars.Context``
copied when the run starts (so what a plugin sets there, an OpenTelemetry current span, stays set for
the run and never leaks into the consumer's code between events), and tool calls find the run's hooks
through it (:func:`current_hooks`).

Thread safety: a :class:`RunHooks` belongs to one run; its hooks may be called from the run's thread and
from the threads waiting for its tool calls at once (pluggy's calling is re-entrant). The contexts are
plain values owned by the run; a :class:`ToolCallContext` belongs to one call.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import pluggy

from .._errors import CallbackError, CancelledError, PluginError
from .._events import BaseEvent, RunError, RunFinished, RunStarted, Usage
from .._markers import hookimpl
from .._messages import Message, ToolCallPart, ToolResultPart
from .._stream.call import CallOptions, ModelCall
from .._stream.provider import CallContext, ModelRequest, Provider
from .._stream.tee import Sink, body_session, tee_session

if TYPE_CHECKING:
    import requests

    from .._principal import Principal
    from .._stream.accumulate import StepResult
    from .._stream.transport import HTTPRequest
    from .tools import Tool, ToolChannel

__all__ = [
    "BUILTIN",
    "ModelCallContext",
    "RetryInfo",
    "RunContext",
    "RunHooks",
    "StepContext",
    "ToolCallContext",
    "current_hooks",
    "plugin_failed",
]

log = logging.getLogger("hookstream.hooks")

T = TypeVar("T")


_current: contextvars.ContextVar[RunHooks | None] = contextvars.ContextVar("hookstream_run_hooks", default=None)


def current_hooks() -> RunHooks | None:
    """The hooks of the run whose context this code runs in, or ``None`` (no run, or a run without hooks).
    Its ``hook`` is the run's pluggy relay: ``current_hooks().hook.hookstream_NAME(...)`` calls a hook a
    plugin declared (``hookstream_addhooks``) on every plugin of the run. Any thread of the run."""
    return _current.get()


@attrs.define(slots=True, frozen=True)
class RetryInfo:
    """A retry about to wait: ``attempt`` is the number of the attempt that failed (1 = the first
    request), ``delay`` the seconds before the next one, ``error`` the typed failure."""

    attempt: int
    delay: float
    error: BaseException


@attrs.define(slots=True, eq=False)
class RunContext:
    """One run, as run hooks see it: AG-UI ``thread_id`` and ``run_id`` (``parent_run_id`` for a nested
    agent run), the provider name and model of its first step, ``messages`` (the conversation it starts
    from: a ``hookstream_run_start`` implementation may change the list in place), ``settings`` (the
    :class:`~hookstream.RunSettings` it was started with, when it came from one), ``state`` (a dict for
    plugins' own per-run values, keyed by plugin name), ``resume`` (the :class:`~hookstream.Resume` it
    continues, when given one), ``started_at``/``ended_at`` in ``time.monotonic()`` seconds and
    ``principal``, who the run is for (``LoopSettings.principal``: the
    :class:`~hookstream.server.Principal` a server verified, the one a durable run kept for its recovered
    copy; ``None`` outside a server; frozen, its ``claims`` shared: read them, never change them)."""

    thread_id: str
    run_id: str
    provider: str
    model: str
    messages: list[Message] = attrs.Factory(list)
    settings: Any = None
    parent_run_id: str | None = None
    state: dict[str, Any] = attrs.Factory(dict)
    resume: Any = None
    started_at: float = attrs.Factory(time.monotonic)
    ended_at: float | None = None
    principal: Principal | None = None


@attrs.define(slots=True, eq=False)
class StepContext:
    """The step about to call the model (``number`` from 1; earlier ``steps`` of the run), with what it
    will send: ``messages``, ``tools`` (``{name: Tool}``), ``tool_choice`` and ``model``
    (``"PROVIDER:MODEL"``, a model name of the run's provider, or a provider object). Assign to change.
    :meth:`emit` tells the run's consumer what a plugin did to the step (``events``: what it queued)."""

    run: RunContext
    number: int
    steps: Sequence[StepResult]
    messages: list[Message]
    tools: dict[str, Tool]
    tool_choice: str | dict[str, Any] | None
    model: Any
    events: list[BaseEvent] = attrs.Factory(list)

    def emit(self, event: BaseEvent) -> None:
        """Send ``event`` (an AG-UI event, usually ``Custom(name, value)`` with a name of the plugin's own,
        such as ``"hookstream.compaction"``) to the run's consumer right after this step's ``STEP_STARTED``,
        in the order emitted. Like the step's other events, it is held with the step when the run holds
        intermediate steps (``stream_tool_call_responses=False``). Call it from ``hookstream_step_start``;
        the run's thread only."""
        self.events.append(event)


class _BufferSink:
    """Collects teed bytes for a ``ModelCallContext.on_body`` tap and hands them over once, at close."""

    def __init__(self, taps: Sequence[Callable[[bytes], None]]) -> None:
        self._parts: list[bytes] = []
        self._taps = taps
        self._closed = False

    def write(self, data: bytes, /) -> int:
        self._parts.append(data)
        return len(data)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        body = b"".join(self._parts)
        for tap in self._taps:
            tap(body)


@attrs.define(slots=True, eq=False)
class ModelCallContext:
    """One model call, as :func:`hookstream_model_call` sees it.

    ``run`` and ``step`` (its number) place it; ``provider`` and ``request`` (a
    :class:`~hookstream.plugin.ModelRequest`; a wrapper may assign a changed one before its ``yield``) say
    what is sent; ``context`` carries the AG-UI ids; ``options`` the retries and transport limits;
    ``state`` is a dict for plugins to pass values between their wrapper's two halves.

    * :meth:`http_request` builds the HTTP request the provider would send (URL, JSON body, headers), for
      keys and logs; its ``body()`` never holds the API key (headers do: read
      ``redacted_headers()``).
    * :meth:`parse_body` runs a stored response body through the provider's framing and adapter, exactly
      as a live body (no socket): the same events and result.
    * ``on_body``: callables given the whole raw response body (``bytes``) when the HTTP response ends
      (whatever way it ends; check the events to know whether it completed).
    * :meth:`abort` stops the call from any thread (the HTTP read returns, the step ends with
      ``RUN_ERROR``); ``model_call`` is the :class:`ModelCall` once the built-in implementation made one
      (its ``exception`` and ``attempts`` are read by the engine and by observers).
    """

    run: RunContext
    step: int
    provider: Provider
    request: ModelRequest
    context: CallContext
    session: requests.Session
    options: CallOptions
    on_body: list[Callable[[bytes], None]] = attrs.Factory(list)
    state: dict[str, Any] = attrs.Factory(dict)
    model_call: ModelCall | None = None
    hooks: RunHooks | None = None
    _abort_reason: BaseException | None = None

    def http_request(self) -> HTTPRequest:
        """The :class:`~hookstream.plugin.HTTPRequest` the provider builds for :attr:`request`."""
        return self.provider.build_request(self.request)

    def parse_body(self, body: bytes, status: int = 200) -> Iterator[BaseEvent]:
        """The call's AG-UI events from a whole response ``body`` (bytes) instead of the network: served
        to the real transport and adapter by a socketless session, with the model call's guarantees
        (exactly one terminal event; a cut-off body ends in ``RUN_ERROR`` ``connection_closed``)."""
        session = body_session(body, self.provider.framing.media_type, status)
        call = ModelCall(self.provider, self.request, self.context, session, CallOptions(
            connect_timeout=None, read_timeout=None, max_event_bytes=self.options.max_event_bytes, max_retries=0))
        self.model_call = call
        if self._abort_reason is not None:
            call.abort(self._abort_reason)
        try:
            yield from call
        finally:
            session.close()

    def replays_to_finish(self, body: bytes) -> bool:
        """Whether ``body`` through this call's adapter ends with ``RUN_FINISHED`` (a stored body worth
        answering from); :attr:`model_call` is left pointing at the live call, whose outcome the engine reads."""
        live = self.model_call
        try:
            last: BaseEvent | None = None
            for last in self.parse_body(body):  # noqa: B007 (only the last event matters)
                pass
            return type(last) is RunFinished
        finally:
            self.model_call = live

    def abort(self, reason: BaseException | None = None) -> None:
        """Stop the call from any thread (``reason``: the error the step ends with; default cancelled)."""
        if self._abort_reason is None:
            self._abort_reason = reason if reason is not None else CancelledError("cancelled")
        call = self.model_call
        if call is not None:
            call.abort(reason)

    def open(self) -> Iterator[BaseEvent]:
        """The built-in model call: :attr:`request` to :attr:`provider` over HTTP (what
        :func:`hookstream_model_call` returns when no plugin answers)."""
        session = self.session
        own: requests.Session | None = None
        if self.on_body:
            taps = list(self.on_body)

            def open_sink(_req: Any, _resp: Any) -> Sink:
                return _BufferSink(taps)

            session = own = tee_session(open_sink, self.session)  # the provider's transport, teed
        call = ModelCall(self.provider, self.request, self.context, session, self.options,
                         on_retry=self._retried)
        self.model_call = call
        if self._abort_reason is not None:
            call.abort(self._abort_reason)
        if own is None:
            return iter(call)
        return _closing(call, own)

    def _retried(self, attempt: int, delay: float, error: BaseException) -> None:
        if self.hooks is not None:
            self.hooks.hook.hookstream_model_call_retry(call=self, retry=RetryInfo(attempt, delay, error))


def _closing(events: Iterable[BaseEvent], session: requests.Session) -> Iterator[BaseEvent]:
    try:
        yield from events
    finally:
        session.close()


@attrs.define(slots=True, eq=False)
class ToolCallContext:
    """One tool call, as :func:`hookstream_tool_call` sees it: ``run``, ``call_id``, ``name``,
    ``arguments`` (the parsed JSON object; a wrapper may assign changed ones before its ``yield``) and
    ``tool`` (the :class:`~hookstream.Tool`, ``None`` when it runs elsewhere by reference).

    What a tool streams while it runs (:meth:`hookstream.ToolContext.emit`, ``add_usage``; in-process executors
    only): ``on_stream`` holds callables each given every AG-UI event and :class:`~hookstream.events.Usage` the run
    took from this call's tool, in order, on the thread that sent it (the tool's; thread-safe if the tool sends from
    threads of its own); a plugin appends one before the tool runs. :meth:`emit` and :meth:`add_usage` stream in the
    run as the tool would (a plugin that answers the call in the tool's place, e.g. from a journal).
    :attr:`principal` is the run's (``None`` outside a server)."""

    run: RunContext | None
    call_id: str
    name: str
    arguments: dict[str, Any] | None
    tool: Tool | None = None
    state: dict[str, Any] = attrs.Factory(dict)
    _runner: Callable[[ToolCallContext], ToolResultPart] | None = None
    on_stream: list[Callable[[BaseEvent | Usage], None]] = attrs.Factory(list)
    _channel: ToolChannel | None = None

    def emit(self, event: BaseEvent) -> bool:
        """Stream ``event`` in the run now, before this call's ``TOOL_CALL_RESULT`` (``on_stream`` is not
        called); ``False`` when this call has no way to the run: its tool takes no
        :class:`~hookstream.ToolContext`, runs in another process, or the run stopped waiting for it."""
        return self._channel.emit(event) if self._channel is not None else False

    def add_usage(self, usage: Usage) -> bool:
        """Add ``usage`` to the run's (as :meth:`hookstream.ToolContext.add_usage`); ``False`` as for :meth:`emit`."""
        return self._channel.add_usage(usage) if self._channel is not None else False

    def tool_channel(self) -> ToolChannel | None:
        """The channel to hand the tool: the run's, tapped for ``on_stream`` when a plugin asked."""
        return self._channel.tapped(self.on_stream) if self._channel is not None and self.on_stream else self._channel

    @property
    def principal(self) -> Principal | None:
        """Who the run is for: ``run.principal`` (``None`` outside a server or before the run is set)."""
        return self.run.principal if self.run is not None else None

    @property
    def call(self) -> ToolCallPart:
        """The call as a :class:`~hookstream.ToolCallPart` (id, name, current arguments)."""
        return ToolCallPart(self.call_id, self.name, self.arguments)

    def with_arguments(self, call: ToolCallPart) -> ToolCallPart:
        """``call`` with this context's arguments (the same part when no plugin changed them)."""
        if self.arguments is call.arguments:
            return call
        return attrs.evolve(call, arguments=self.arguments)

    def refuse(self, reason: str) -> ToolResultPart:
        """An error result saying the call was refused (``Error: <reason>``); return it to stop the call."""
        return ToolResultPart(self.call_id, self.name, f"Error: {reason}", is_error=True)

    def run_tool(self) -> ToolResultPart:
        """Run the tool with the current :attr:`arguments` (the built-in implementation)."""
        if self._runner is None:
            raise RuntimeError("this tool call has no runner")
        return self._runner(self)


class _BuiltinRunHooks:
    """The innermost implementations: what a run does when no plugin answers."""

    @hookimpl(trylast=True)
    def hookstream_model_call(self, call: ModelCallContext) -> Iterable[BaseEvent]:
        return call.open()

    @hookimpl(trylast=True)
    def hookstream_tool_call(self, call: ToolCallContext) -> ToolResultPart:
        return call.run_tool()


BUILTIN = _BuiltinRunHooks()


class RunHooks:
    """The run hooks of one run: ``hook`` is pluggy's relay (``hooks.hook.hookstream_run_start(run=...)``),
    ``run`` the :class:`RunContext` once :meth:`start_run` ran."""

    __slots__ = ("_context", "hook", "pm", "run", "state")

    def __init__(self, pm: pluggy.PluginManager, state: Mapping[str, Any] | None = None) -> None:
        self.pm = pm
        self.hook = pm.hook
        self.state = dict(state or {})
        """Values put in ``run.state`` as the run starts (the per-run driver of the run's observers)."""
        self.run: RunContext | None = None
        self._context: contextvars.Context | None = None

    # -- the run --------------------------------------------------------------------------------
    def start_run(self, run: RunContext) -> None:
        """Open the run's own context (a copy of the caller's), make these hooks current in it and call
        ``hookstream_run_start`` there."""
        self.run = run
        ctx = contextvars.copy_context()
        self._context = ctx
        ctx.run(self._start, run)

    def _start(self, run: RunContext) -> None:
        _current.set(self)
        if self.state:
            run.state.update(self.state)
        self.hook.hookstream_run_start(run=run)

    def wrap(self, events: Iterator[T]) -> Iterator[T]:
        """``events`` advanced inside the run's context (each ``next`` runs there)."""
        ctx = self._context
        if ctx is None:
            raise RuntimeError("start_run() first")
        step: Callable[[], T] = events.__next__
        while True:
            try:
                ev = ctx.run(step)
            except StopIteration:
                return
            yield ev

    def end_run(self, result: Any) -> None:
        """Call ``hookstream_run_end`` once, in the run's context; an exception is logged."""
        run, ctx = self.run, self._context
        if run is None or ctx is None or run.ended_at is not None:
            return
        run.ended_at = time.monotonic()
        try:
            ctx.run(self.hook.hookstream_run_end, run=run, result=result)
        except Exception:
            log.exception("hookstream_run_end failed")

    # -- steps and calls ------------------------------------------------------------------------
    def step_start(self, step: StepContext) -> None:
        """``hookstream_step_start``; a plugin that raises ends the run with ``RUN_ERROR`` ``plugin_error``."""
        try:
            self.hook.hookstream_step_start(step=step)
        except CallbackError:
            raise  # prepare_step's own error (the built-in PrepareStep plugin)
        except Exception as exc:
            raise PluginError(f"a run plugin failed in hookstream_step_start: {type(exc).__name__}: {exc}") from exc

    def step_end(self, run: RunContext, result: StepResult) -> None:
        """``hookstream_step_end``; an exception is logged (the step is over: nothing to stop)."""
        try:
            self.hook.hookstream_step_end(run=run, result=result)
        except Exception:
            log.exception("hookstream_step_end failed")

    def model_call(self, call: ModelCallContext) -> Iterator[BaseEvent]:
        """The call's events through ``hookstream_model_call``; a plugin that raises here ends the call
        with ``RUN_ERROR`` ``plugin_error`` (after ``RUN_STARTED``). An iterator of a plugin's that raises
        while it is read is the engine's to turn into that error (:func:`plugin_failed`), so no layer is
        added per event."""
        call.hooks = self
        try:
            events = self.hook.hookstream_model_call(call=call)
        except Exception as exc:
            return iter([RunStarted(call.context.thread_id, call.context.run_id), plugin_failed(exc)])
        return iter(events)

    def tool_call(self, call: ToolCallContext) -> ToolResultPart:
        """The call's result through ``hookstream_tool_call``; a plugin that raises gives an error result."""
        call.run = self.run
        try:
            result: ToolResultPart | None = self.hook.hookstream_tool_call(call=call)
        except Exception as exc:
            log.warning("a hookstream_tool_call implementation failed for %r", call.name, exc_info=True)
            return call.refuse(f"a plugin failed while running {call.name!r}: {type(exc).__name__}: {exc}")
        if result is None:  # every implementation passed: run it
            return call.run_tool()
        return result


def plugin_failed(exc: BaseException) -> RunError:
    """The ``RUN_ERROR`` ``plugin_error`` a model call ends with when a plugin's hook raised ``exc``."""
    log.warning("a hookstream_model_call implementation failed", exc_info=exc)
    error = PluginError(f"a run plugin failed in hookstream_model_call: {type(exc).__name__}: {exc}")
    return RunError(error.message, code=error.code)


# -- which hooks a run has ---------------------------------------------------------------------------------


def options_of(spec: object) -> tuple[str, Mapping[str, Any]] | None:
    """``(name, options)`` for a plugin named in settings (``"NAME"`` or ``("NAME", {options})``), else None."""
    if isinstance(spec, str):
        return spec, {}
    if isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], str) and isinstance(spec[1], Mapping):
        return spec[0], spec[1]
    return None
