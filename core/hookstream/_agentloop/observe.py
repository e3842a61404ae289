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

Cost: without observers a run does what it did before; each observation point checks one ``None``
(per call, never per chunk). An observer method that raises is logged once (a warning with its
traceback) and that observer is not called again in the run; the run goes on.

The run's context: with observers, the engine runs every step of the run inside one
``contextvars.Context`` copied when the run starts, so what an observer attaches there (an
OpenTelemetry current span) stays attached for the whole run and never leaks into the consumer's code
between events; model calls and tool calls find the run's :class:`Observers` through it.

Thread safety: ``tool_start``/``tool_end`` may be called on several executor threads at once; observers
must allow that. Disabling a failed observer is locked; calling them is not.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from .._events import BaseEvent, RunFinished, Usage
from .._messages import ToolCallPart, ToolResultPart
from .._prices import priced
from .._stream.provider import ModelRequest

if TYPE_CHECKING:
    from .._stream.provider import Provider

__all__ = ["HOOKS", "ModelCallInfo", "Observer", "Observers", "RetryInfo", "RunInfo", "ToolInfo", "current"]

log = logging.getLogger("hookstream.observe")

T = TypeVar("T")

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


@attrs.define(slots=True, frozen=True)
class RetryInfo:
    """A retry about to wait: ``attempt`` is the number of the attempt that failed (1 = the first
    request), ``delay`` the seconds before the next one, ``error`` the typed failure."""

    attempt: int
    delay: float
    error: BaseException


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

_current: contextvars.ContextVar[Observers | None] = contextvars.ContextVar("hookstream_observers", default=None)


def current() -> Observers | None:
    """The observers of the run whose context this code runs in, or ``None`` (no run, no observers)."""
    return _current.get()


class Observers:
    """The observers of one run, called in registration order. Build with :meth:`of` (``None`` when
    there are none, so call sites test one ``None``)."""

    __slots__ = ("_context", "_hooks", "_lock", "_warned", "run", "wants_chunks")

    def __init__(self, observers: Iterable[Any]) -> None:
        self._lock = threading.Lock()
        self._warned: set[int] = set()
        self._hooks: dict[str, tuple[tuple[Any, Callable[..., None]], ...]] = {}
        self._context: contextvars.Context | None = None
        self.run: RunInfo | None = None
        self._build(list(observers))

    @classmethod
    def of(cls, observers: Iterable[Any] | None) -> Observers | None:
        items = [o for o in observers or () if o is not None]
        return cls(items) if items else None

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

    # -- the run --------------------------------------------------------------------------------
    def start_run(self, run: RunInfo) -> None:
        """Open the run's own context (a copy of the caller's), make these observers current in it and
        call ``run_start`` there."""
        self.run = run
        ctx = contextvars.copy_context()
        self._context = ctx
        ctx.run(self._start, run)

    def _start(self, run: RunInfo) -> None:
        _current.set(self)
        self._emit("run_start", run)

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
        """Call ``run_end`` with the run's result, inside the run's context; once."""
        run, ctx = self.run, self._context
        if run is None or ctx is None or run.ended_at is not None:
            return
        run.ended_at = time.monotonic()
        ctx.run(self._emit, "run_end", run, result)

    # -- model calls ----------------------------------------------------------------------------
    def model_call_start(self, provider: Provider, request: ModelRequest, thread_id: str, run_id: str) -> ModelCallInfo:
        call = ModelCallInfo(provider.name, request.model, request, thread_id, run_id, provider.base_url,
                             priced_as=provider.priced_as)
        self._emit("model_call_start", call)
        return call

    def model_call_first_chunk(self, call: ModelCallInfo) -> None:
        call.first_chunk_at = time.monotonic()
        self._emit("model_call_first_chunk", call)

    def tap(self, call: ModelCallInfo, events: Iterator[BaseEvent]) -> Iterator[BaseEvent]:
        """``events`` with ``model_call_chunk`` called for each (only used when an observer wants it)."""
        for ev in events:
            if self.wants_chunks:
                self._emit("model_call_chunk", call, ev)
            yield ev

    def model_call_retry(self, call: ModelCallInfo, attempt: int, delay: float, error: BaseException) -> None:
        self._emit("model_call_retry", call, RetryInfo(attempt, delay, error))

    def model_call_end(self, call: ModelCallInfo, event: RunFinished) -> None:
        if call.ended_at is not None:
            return
        call.ended_at = time.monotonic()
        call.finish_reason = event.finish_reason
        call.raw_finish_reason = event.raw_finish_reason
        call.response_id, call.response_model = _response_ids(event.metadata)
        call.usage = priced(event.usage, call.priced_as or call.provider, call.response_model, call.model)
        self._emit("model_call_end", call)

    def model_call_error(self, call: ModelCallInfo, error: BaseException, code: str | None) -> None:
        if call.ended_at is not None:
            return
        call.ended_at = time.monotonic()
        call.error_type = code
        self._emit("model_call_error", call, error)

    # -- tools ----------------------------------------------------------------------------------
    def tool_start(self, call: ToolCallPart) -> ToolInfo:
        info = ToolInfo(call.name, call.id, call.arguments)
        self._emit("tool_start", info)
        return info

    def tool_end(self, info: ToolInfo, result: ToolResultPart) -> None:
        info.ended_at = time.monotonic()
        info.is_error = result.is_error
        self._emit("tool_end", info, result)


_ID_KEYS = ("response_id", "responseId", "id")
_MODEL_KEYS = ("response_model", "modelVersion", "model")


def _response_ids(metadata: dict[str, Any] | None) -> tuple[str | None, str | None]:
    """(response id, response model) from a ``RUN_FINISHED``'s provider metadata, when an adapter put
    them there (Gemini: ``responseId``/``modelVersion``; OpenAI Responses: ``response_id``)."""
    rid = model = None
    for value in (metadata or {}).values():
        if not isinstance(value, dict):
            continue
        rid = rid or next((value[k] for k in _ID_KEYS if isinstance(value.get(k), str)), None)
        model = model or next((value[k] for k in _MODEL_KEYS if isinstance(value.get(k), str)), None)
    return rid, model
