"""Run observers: what tracing, metrics and timing tools see of a run, and the fan-out that calls them.

An observer is any object with some of the methods of :class:`Observer` (all optional; a subclass of
:class:`Observer` inherits no-ops). Plugins register observer factories through
``hookstream_register_observers``; ``chat()`` builds one observer per run from each factory and
passes explicit ones from ``chat(observers=...)``. What is observed, and where it happens:

* ``run_start(run)`` / ``run_end(run, result)``: the agent loop's run (:class:`RunInfo`; ``result``
  is the :class:`~hookstream.RunResult`: ``outcome``, summed ``usage``, ``steps``). Both are called
  inside the run's own :mod:`contextvars` context (below), on the thread that iterates the run.
* ``model_call_start(call)``: before a model call's request is sent (:class:`ModelCallInfo`: provider
  name, model, temperature, max tokens, the request). ``model_call_first_chunk(call)``: when its first
  event after ``RUN_STARTED`` arrives (``call.first_chunk_at``). ``model_call_retry(call, retry)``:
  before each backoff wait (:class:`RetryInfo`: attempt, delay in seconds, the error).
  ``model_call_end(call)``: its ``RUN_FINISHED`` arrived (``response_model``, ``response_id`` when the
  provider sent them, ``finish_reason``, ``usage``). ``model_call_error(call, error)``: it ended with
  ``RUN_ERROR`` (a typed :class:`~hookstream.HookstreamError`). Exactly one of end/error per call.
* ``model_call_chunk(call, event)``: every AG-UI event of the call. Only observers that define it
  make the model call tap its events (the OpenTelemetry plugin does when content capture is on);
  without one no per-event work is added.
* ``tool_start(tool)`` / ``tool_end(tool, result)``: around each tool call (:class:`ToolInfo`), on
  the executor's thread that waits for it, with the run's context (the executors copy it), so an
  OpenTelemetry span made current in ``tool_start`` is the current span inside the tool function.

Observers are run plugins: :class:`ObserverPlugin` implements the run hooks
(:mod:`hookstream._agentloop.hooks`) and forwards each to these methods; the run's own
:mod:`contextvars` context, in which every hook runs, is the hooks' (an OpenTelemetry span made current
in ``run_start`` stays current for the run). Cost: a run without observers and without run plugins has
no hooks at all; ``model_call_chunk`` adds per-event work only when some observer defines it. An observer
method that raises is logged once (a warning with its traceback) and that observer is not called again in
the run; the run goes on.

Thread safety: ``tool_start``/``tool_end`` may be called on several executor threads at once; observers
must allow that. Disabling a failed observer is locked; calling them is not.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

import attrs

from .._errors import CancelledError, ProviderError
from .._events import BaseEvent, RunError, RunFinished, RunStarted, Usage
from .._markers import hookimpl
from .._messages import ToolResultPart
from .._prices import priced
from .._stream.provider import ModelRequest
from .hooks import RetryInfo

if TYPE_CHECKING:
    from .hooks import ModelCallContext, RunContext, ToolCallContext

__all__ = ["HOOKS", "OBSERVERS", "STATE_KEY", "ModelCallInfo", "Observer", "ObserverPlugin", "RetryInfo", "RunInfo",
           "ToolInfo", "response_ids"]

log = logging.getLogger("hookstream.observe")

HOOKS = (
    "run_start", "run_end", "model_call_start", "model_call_first_chunk", "model_call_chunk", "model_call_retry",
    "model_call_end", "model_call_error", "tool_start", "tool_end",
)
"""The observer method names, in the order of a run."""


@attrs.define(slots=True)
class RunInfo:
    """One agent-loop run: AG-UI ``thread_id`` and ``run_id``, the provider name (``openai``...) and
    model of its first step, ``started_at``/``ended_at`` in ``time.monotonic()`` seconds."""

    thread_id: str
    run_id: str
    provider: str
    model: str
    started_at: float = attrs.Factory(time.monotonic)
    ended_at: float | None = None


@attrs.define(slots=True)
class ModelCallInfo:
    """One model call, filled in as it goes. Times are ``time.monotonic()`` seconds.

    ``provider`` is the provider's registered name, ``base_url`` its API root (no credentials),
    ``request`` the :class:`~hookstream.plugin.ModelRequest` (messages, tools, ``temperature``,
    ``max_tokens``). ``attempts`` counts HTTP requests sent (retries included). On ``RUN_FINISHED``:
    ``finish_reason`` (normalised), ``raw_finish_reason``, ``usage`` (with its ``cost`` when genai-prices
    prices the model), and ``response_id`` /
    ``response_model`` when the provider's events carried them (``None`` otherwise). On failure:
    ``error_type``, the ``RUN_ERROR`` code.
    """

    provider: str
    model: str
    request: ModelRequest
    thread_id: str
    run_id: str
    base_url: str | None = None
    started_at: float = attrs.Factory(time.monotonic)
    first_chunk_at: float | None = None
    ended_at: float | None = None
    attempts: int = 0
    finish_reason: str | None = None
    raw_finish_reason: str | None = None
    usage: Usage | None = None
    response_id: str | None = None
    response_model: str | None = None
    error_type: str | None = None
    priced_as: str | None = attrs.field(default=None, repr=False)  # Provider.priced_as, for Usage.cost

    @property
    def temperature(self) -> float | None:
        return self.request.temperature

    @property
    def max_tokens(self) -> int | None:
        return self.request.max_tokens


@attrs.define(slots=True)
class ToolInfo:
    """One tool call being run: the tool ``name``, the tool ``call_id`` and parsed ``arguments``;
    ``started_at``/``ended_at`` in ``time.monotonic()`` seconds; ``is_error`` once it ended."""

    name: str
    call_id: str
    arguments: dict[str, Any] | None
    started_at: float = attrs.Factory(time.monotonic)
    ended_at: float | None = None
    is_error: bool | None = None


class Observer:
    """Base class with a no-op for every observation; override what you need (see the module doc).

    Subclassing is optional: any object with some of these methods is an observer.
    """

    def run_start(self, run: RunInfo) -> None: ...

    def run_end(self, run: RunInfo, result: Any) -> None: ...

    def model_call_start(self, call: ModelCallInfo) -> None: ...

    def model_call_first_chunk(self, call: ModelCallInfo) -> None: ...

    def model_call_chunk(self, call: ModelCallInfo, event: BaseEvent) -> None: ...

    def model_call_retry(self, call: ModelCallInfo, retry: RetryInfo) -> None: ...

    def model_call_end(self, call: ModelCallInfo) -> None: ...

    def model_call_error(self, call: ModelCallInfo, error: BaseException) -> None: ...

    def tool_start(self, tool: ToolInfo) -> None: ...

    def tool_end(self, tool: ToolInfo, result: ToolResultPart) -> None: ...


_NOOPS = {name: getattr(Observer, name) for name in HOOKS if hasattr(Observer, name)}


class ObserverPlugin:
    """Observers driven by the run hooks: one run plugin forwarding each hook to the :class:`Observer`
    methods of the objects it was given, in their order. A run's observers (``chat(observers=...)``, the
    factories plugins register with ``hookstream_register_observers``) are one such plugin. An observer
    method that raises is logged once and that observer is not called again in the run.

    Thread safety: ``tool_start``/``tool_end`` are called on several executor threads at once; disabling
    a failed observer is locked, calling them is not."""

    __slots__ = ("_hooks", "_lock", "_warned", "info", "wants_chunks")

    def __init__(self, observers: Iterable[Any]) -> None:
        self._lock = threading.Lock()
        self._warned: set[int] = set()
        self._hooks: dict[str, tuple[tuple[Any, Callable[..., None]], ...]] = {}
        self.info: RunInfo | None = None
        self._build([o for o in observers if o is not None])

    def _build(self, observers: list[Any]) -> None:
        hooks: dict[str, tuple[tuple[Any, Callable[..., None]], ...]] = {}
        for name in HOOKS:
            found = []
            for obs in observers:
                fn = getattr(obs, name, None)
                # An inherited no-op is skipped: no call at all for what an observer does not watch.
                if fn is None or getattr(fn, "__func__", None) is _NOOPS.get(name):
                    continue
                found.append((obs, fn))
            hooks[name] = tuple(found)
        self._hooks = hooks
        self.wants_chunks = bool(hooks["model_call_chunk"])

    def _emit(self, name: str, *args: Any) -> None:
        for obs, fn in self._hooks[name]:
            try:
                fn(*args)
            except Exception:
                self._disable(obs, name)

    def _disable(self, obs: Any, name: str) -> None:
        with self._lock:
            first = id(obs) not in self._warned
            self._warned.add(id(obs))
            self._hooks = {
                hook: tuple(pair for pair in pairs if pair[0] is not obs) for hook, pairs in self._hooks.items()
            }
            self.wants_chunks = bool(self._hooks["model_call_chunk"])
        if first:
            log.warning("observer %s failed in %s and is disabled for the rest of the run",
                        type(obs).__name__, name, exc_info=True)

    # -- run hooks --------------------------------------------------------------------------------
    @hookimpl
    def hookstream_run_start(self, run: RunContext) -> None:
        self.info = RunInfo(run.thread_id, run.run_id, run.provider, run.model, started_at=run.started_at)
        self._emit("run_start", self.info)

    @hookimpl
    def hookstream_run_end(self, run: RunContext, result: Any) -> None:
        if self.info is None:
            return
        self.info.ended_at = run.ended_at if run.ended_at is not None else time.monotonic()
        self._emit("run_end", self.info, result)

    @hookimpl(wrapper=True)
    def hookstream_model_call(self, call: ModelCallContext) -> Generator[None, Iterable[BaseEvent] | None,
                                                                       Iterable[BaseEvent] | None]:
        provider = call.provider
        info = ModelCallInfo(provider.name, call.request.model, call.request, call.context.thread_id,
                             call.context.run_id, provider.base_url, priced_as=provider.priced_as)
        call.state[_STATE] = info
        self._emit("model_call_start", info)
        events = yield
        if events is None:
            return None
        return self._watch(call, info, events)

    def _watch(self, call: ModelCallContext, info: ModelCallInfo, events: Iterable[BaseEvent]) -> Iterator[BaseEvent]:
        first = True
        try:
            for ev in events:
                t = type(ev)
                if self.wants_chunks:
                    self._emit("model_call_chunk", info, ev)
                if t is RunFinished or t is RunError:
                    # Before the yield: the consumer may stop reading at the terminal event.
                    self._ended(call, info, ev)
                elif first and t is not RunStarted:
                    first = False
                    info.first_chunk_at = time.monotonic()
                    self._emit("model_call_first_chunk", info)
                yield ev
        finally:
            if info.ended_at is None:
                self._failed(call, info, CancelledError("the consumer stopped reading the model call"), "cancelled")

    def _ended(self, call: ModelCallContext, info: ModelCallInfo, event: BaseEvent) -> None:
        if isinstance(event, RunFinished):
            if info.ended_at is not None:
                return
            info.ended_at = time.monotonic()
            info.attempts = _attempts(call)
            info.finish_reason = event.finish_reason
            info.raw_finish_reason = event.raw_finish_reason
            info.response_id, info.response_model = response_ids(event.metadata)
            info.usage = priced(event.usage, info.priced_as or info.provider, info.response_model, info.model)
            self._emit("model_call_end", info)
        elif isinstance(event, RunError):
            model_call = call.model_call
            error = model_call.exception if model_call is not None and model_call.exception is not None else \
                ProviderError(event.message, error_type=event.code)
            self._failed(call, info, error, event.code)

    def _failed(self, call: ModelCallContext, info: ModelCallInfo, error: BaseException, code: str | None) -> None:
        if info.ended_at is not None:
            return
        info.ended_at = time.monotonic()
        info.attempts = _attempts(call)
        info.error_type = code
        self._emit("model_call_error", info, error)

    @hookimpl
    def hookstream_model_call_retry(self, call: ModelCallContext, retry: RetryInfo) -> None:
        info = call.state.get(_STATE)
        if isinstance(info, ModelCallInfo):
            info.attempts = retry.attempt
            self._emit("model_call_retry", info, retry)

    @hookimpl(wrapper=True)
    def hookstream_tool_call(self, call: ToolCallContext) -> Generator[None, ToolResultPart | None,
                                                                     ToolResultPart | None]:
        if not self._hooks["tool_start"] and not self._hooks["tool_end"]:
            return (yield)
        info = ToolInfo(call.name, call.call_id, call.arguments)
        self._emit("tool_start", info)
        result: ToolResultPart | None = None
        try:
            result = yield
            return result
        finally:
            info.ended_at = time.monotonic()
            end = result if result is not None else ToolResultPart(
                call.call_id, call.name, f"Error: {call.name!r} stopped", is_error=True)
            info.is_error = end.is_error
            self._emit("tool_end", info, end)


_STATE = "hookstream.observers"
STATE_KEY = "hookstream.run-observers"
"""Where a run's :class:`ObserverPlugin` sits in ``RunContext.state`` for :data:`OBSERVERS` to find."""


class _RunObservers:
    """The run hooks of every observed run, one shared object: each hook finds the run's own
    :class:`ObserverPlugin` in ``run.state`` (put there when the run starts) and hands over to it. Shared,
    so a run with observers needs no plugin manager of its own."""

    @hookimpl
    def hookstream_run_start(self, run: RunContext) -> None:
        plugin = run.state.get(STATE_KEY)
        if plugin is not None:
            plugin.hookstream_run_start(run)

    @hookimpl
    def hookstream_run_end(self, run: RunContext, result: Any) -> None:
        plugin = run.state.get(STATE_KEY)
        if plugin is not None:
            plugin.hookstream_run_end(run, result)

    @hookimpl(wrapper=True)
    def hookstream_model_call(self, call: ModelCallContext) -> Generator[None, Iterable[BaseEvent] | None,
                                                                       Iterable[BaseEvent] | None]:
        plugin = call.run.state.get(STATE_KEY)
        if plugin is None:
            return (yield)
        events: Iterable[BaseEvent] | None = yield from plugin.hookstream_model_call(call)
        return events

    @hookimpl
    def hookstream_model_call_retry(self, call: ModelCallContext, retry: RetryInfo) -> None:
        plugin = call.run.state.get(STATE_KEY)
        if plugin is not None:
            plugin.hookstream_model_call_retry(call, retry)

    @hookimpl(wrapper=True)
    def hookstream_tool_call(self, call: ToolCallContext) -> Generator[None, ToolResultPart | None,
                                                                     ToolResultPart | None]:
        plugin = call.run.state.get(STATE_KEY) if call.run is not None else None
        if plugin is None:
            return (yield)
        result: ToolResultPart | None = yield from plugin.hookstream_tool_call(call)
        return result


OBSERVERS = _RunObservers()
"""The shared run plugin that drives each run's observers."""


def _attempts(call: ModelCallContext) -> int:
    model_call = call.model_call
    return model_call.attempts if model_call is not None else 0


_ID_KEYS = ("response_id", "responseId", "id")
_MODEL_KEYS = ("response_model", "modelVersion", "model")


def response_ids(metadata: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """(response id, response model) from a ``RUN_FINISHED``'s provider metadata, when an adapter put
    them there (Gemini: ``responseId``/``modelVersion``; OpenAI Responses: ``response_id``)."""
    rid = model = None
    for value in (metadata or {}).values():
        if not isinstance(value, dict):
            continue
        rid = rid or next((value[k] for k in _ID_KEYS if isinstance(value.get(k), str)), None)
        model = model or next((value[k] for k in _MODEL_KEYS if isinstance(value.get(k), str)), None)
    return rid, model
