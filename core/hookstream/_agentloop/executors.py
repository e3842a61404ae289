"""Tool executors: how the tool calls of one step run, and the data contract between them and the engine.

The engine hands an executor one :class:`ToolCallRequest` per runnable call of a step (plain data: a
tool reference a worker can import, the arguments, the call id and name, a time limit, the history) and
the run's :class:`~hookstream.CancellationToken`; the executor returns one
:class:`~hookstream.ToolResultPart` per request, in the order of the requests (call order), whatever
order they finish in. A failing, timed-out or cancelled call is an error result, never an exception.

* ``thread`` (default): all calls in parallel, one thread each.
* ``sequential``: one after another on the caller's thread.
* ``bounded``: in parallel, at most ``max_concurrency`` at once.
* ``process``: each call in its own worker process (:class:`concurrent.futures.ProcessPoolExecutor`,
  ``forkserver`` start); the tool must be importable (``module:qualname``); a time limit or a
  cancellation kills the worker.

Registered by name through the plugin hook ``hookstream_register_tool_executors``; ``hookstream-ray``
adds ``ray``. An executor of your own can reuse :func:`run_calls`, which waits for each call on its own
thread in a copy of the caller's :mod:`contextvars` context (the run's observers and an OpenTelemetry
current span reach it) and reports ``tool_start``/``tool_end`` to the run's observers there.

Thread safety: executors keep no per-run state between ``run`` calls and may be shared between runs.
"""

from __future__ import annotations

import contextvars
import importlib
import os
import signal
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from .._messages import Message, ToolCallPart, ToolResultPart
from .._principal import Principal
from .hooks import ToolCallContext, current_hooks
from .tools import CancellationToken, Tool, ToolChannel, ToolContext, _read_function, run_tool, run_tool_guarded

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

__all__ = [
    "BoundedExecutor",
    "ProcessExecutor",
    "SequentialExecutor",
    "ThreadExecutor",
    "ToolCallRequest",
    "ToolExecutor",
    "error_part",
    "resolve_tool",
    "run_calls",
    "run_request",
    "tool_ref",
]

_POLL = 0.01  # seconds between checks of the run's token while a remote call runs: bounds cancel latency


@attrs.define(slots=True, frozen=True)
class ToolCallRequest:
    """One tool call for an executor: plain data that pickles, so it can be shipped to another process.

    ``ref`` is ``"module:qualname"`` of the tool's function (or of a module-level ``@tool`` object), which a
    worker imports; ``None`` when the function cannot be imported by name (a closure, a lambda, a bound
    method...); remote executors then answer with an error result. ``tool`` is the :class:`Tool` itself
    for in-process executors; it is dropped (``None``) by :meth:`for_wire` before a request leaves the
    process. ``call`` holds the call id, the tool name and the parsed ``arguments``.

    Time limit: ``timeout`` is seconds (``None``: no limit) counted from ``started_at``, a Unix time in
    seconds (:func:`time.time`) taken when the engine handed the call over. Wall-clock time is used
    because a monotonic clock means nothing in another process or on another machine; executors measure
    what is left with :meth:`remaining` once, when they start waiting, and then count it down with their
    own monotonic clock, so a clock step during the call does not matter.

    ``messages`` is the conversation so far (what :class:`~hookstream.ToolContext` gives the tool);
    ``deps`` the run's application context (``chat(..., context=obj)``, :attr:`ToolContext.deps`), only
    for a tool that declares a ``ToolContext`` parameter (else ``None``); it goes with the request, so a
    process or Ray worker receives a pickled copy;
    ``max_output_chars`` and ``structure_arguments`` carry the tool settings a worker must apply the same
    way (:func:`~hookstream.run_tool`): the output size limit and whether arguments are structured into
    the function's annotations. ``channel`` (in-process only, dropped by :meth:`for_wire`) is how a tool
    streams events and adds usage to the run while it runs (:meth:`~hookstream.ToolContext.emit`).
    ``principal`` is who the run is for (:attr:`~hookstream.ToolContext.principal`), kept like ``deps``
    (only for a tool that takes a ``ToolContext``; a worker receives a pickled copy).
    """

    call: ToolCallPart
    ref: str | None
    timeout: float | None = None
    started_at: float = attrs.Factory(time.time)
    messages: tuple[Message, ...] = ()
    max_output_chars: int = 1_000_000
    structure_arguments: bool = True
    resources: dict[str, float] = attrs.Factory(dict)
    tool: Tool | None = attrs.field(default=None, eq=False, repr=False)
    deps: Any = attrs.field(default=None, eq=False, repr=False)
    channel: ToolChannel | None = attrs.field(default=None, eq=False, repr=False)
    principal: Principal | None = attrs.field(default=None, eq=False, repr=False)

    @property
    def id(self) -> str:
        return self.call.id

    @property
    def name(self) -> str:
        return self.call.name

    @classmethod
    def of(cls, t: Tool, call: ToolCallPart, messages: Sequence[Message] = (),
           timeout: float | None = None, deps: Any = None, channel: ToolChannel | None = None,
           principal: Principal | None = None) -> ToolCallRequest:
        """The request to run ``call`` with ``t``; ``timeout`` defaults to the tool's own; ``deps``,
        ``channel`` and ``principal`` are kept only when the tool takes a :class:`~hookstream.ToolContext`."""
        takes = t.context_param is not None
        return cls(call, tool_ref(t), t.timeout if timeout is None else timeout, time.time(), tuple(messages),
                   t.max_output_chars, bool(t.argument_types), dict(t.resources), t,
                   deps if takes else None, channel if takes else None, principal if takes else None)

    def for_wire(self) -> ToolCallRequest:
        """This request without what stays in this process: the :class:`Tool` (its function may not
        pickle) and the run's :class:`~hookstream._agentloop.tools.ToolChannel`."""
        return attrs.evolve(self, tool=None, channel=None)

    def remaining(self, now: float | None = None) -> float | None:
        """Seconds left of the time limit (never below 0), ``None`` without one."""
        if self.timeout is None:
            return None
        elapsed = (time.time() if now is None else now) - self.started_at
        return max(0.0, self.timeout - max(0.0, elapsed))


class ToolExecutor(Protocol):
    """Runs the tool calls of one step: one :class:`~hookstream.ToolResultPart` per request, in request
    order. ``cancel`` is the run's token: when it is set (or a request's time limit passes), the call must
    be stopped wherever it runs and answered with an error result."""

    def run(self, requests: Sequence[ToolCallRequest], cancel: CancellationToken) -> list[ToolResultPart]: ...


def error_part(req: ToolCallRequest, text: str) -> ToolResultPart:
    """The error result ``Error: <text>`` for ``req``."""
    return ToolResultPart(req.id, req.name, f"Error: {text}", is_error=True)


def timed_out(req: ToolCallRequest) -> ToolResultPart:
    return error_part(req, f"{req.name!r} timed out after {req.timeout or 0:g} s")


def cancelled(req: ToolCallRequest) -> ToolResultPart:
    return error_part(req, f"{req.name!r} was cancelled")


# -- tool references -----------------------------------------------------------------------------------


def tool_ref(t: Tool) -> str | None:
    """``"module:qualname"`` that imports back to ``t`` (a module-level ``@tool``) or to ``t.fn``, else
    ``None`` (a client tool, a closure, a lambda, a bound method, a callable object...)."""
    fn = t.fn
    module, qualname = getattr(fn, "__module__", None), getattr(fn, "__qualname__", None)
    if fn is None or not module or not qualname or "<" in qualname:
        return None
    # Only modules already loaded: computing a ref on the engine's thread must not import anything.
    loaded = sys.modules.get(module)
    if loaded is None:
        return None
    try:
        found = _walk(loaded, qualname)
    except AttributeError:
        return None
    return f"{module}:{qualname}" if found is fn or (isinstance(found, Tool) and found.fn is fn) else None


def _walk(obj: Any, qualname: str) -> Any:
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj


def _import(ref: str) -> Any:
    module, _, qualname = ref.partition(":")
    return _walk(importlib.import_module(module), qualname)


def resolve_tool(req: ToolCallRequest) -> Tool:
    """The :class:`Tool` to run ``req`` with in a worker: ``req.tool`` when it came along, else the tool
    imported from ``req.ref`` (a function is read as :func:`~hookstream.tool` reads it; the name and limits
    are the request's). Raises :class:`LookupError` with a readable message when ``ref`` does not import."""
    if req.tool is not None:
        return req.tool
    if req.ref is None:
        raise LookupError(
            f"{req.name!r} cannot run in another process: its function is not importable by name "
            "(a closure, lambda or bound method); define it at module level"
        )
    try:
        found = _import(req.ref)
    except Exception as exc:
        raise LookupError(f"cannot import tool {req.ref!r}: {type(exc).__name__}: {exc}") from None
    fn = found.fn if isinstance(found, Tool) else found
    if not callable(fn):
        raise LookupError(f"tool {req.ref!r} is not callable")
    _desc, _params, ctx, argument_types = _read_function(fn, strict=False)
    return Tool(req.name, fn=fn, context_param=ctx, max_output_chars=req.max_output_chars,
                argument_types=argument_types if req.structure_arguments else {})


def run_request(req: ToolCallRequest) -> ToolResultPart:
    """Run ``req`` here, to the end (no time limit: the caller enforces it by stopping this process or
    task). What a worker process or Ray task calls; every failure is an error result."""
    try:
        t = resolve_tool(req)
    except Exception as exc:
        return error_part(req, str(exc))
    return run_tool(t, req.call, ToolContext(req.id, list(req.messages), CancellationToken(), req.deps,
                                             principal=req.principal))


# -- running calls ------------------------------------------------------------------------------------

RunOne = Callable[[ToolCallRequest, CancellationToken], ToolResultPart]


def _observed(req: ToolCallRequest, cancel: CancellationToken, one: RunOne) -> ToolResultPart:
    """``one(req, cancel)`` through the run's ``hookstream_tool_call`` hooks, on this thread (directly
    when the run has none)."""
    hooks = current_hooks()
    if hooks is None:
        return one(req, cancel)

    def runner(ctx: ToolCallContext) -> ToolResultPart:
        call = ctx.with_arguments(req.call)
        return one(req if call is req.call else attrs.evolve(req, call=call), cancel)

    return hooks.tool_call(ToolCallContext(None, req.call.id, req.call.name, req.call.arguments, req.tool,
                                           runner=runner))


def run_calls(
    requests: Sequence[ToolCallRequest], cancel: CancellationToken, one: RunOne, max_concurrency: int | None = None
) -> list[ToolResultPart]:
    """Run ``one(request, cancel)`` for every request, at most ``max_concurrency`` at once (``None``: all),
    each on its own thread in a copy of the caller's :mod:`contextvars` context; results in request order.
    ``one`` waits for its call (in-process, in a process, on a cluster) and returns its result part."""
    if len(requests) <= 1:
        return [_observed(r, cancel, one) for r in requests]
    workers = min(len(requests), max_concurrency or len(requests))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hookstream-tool") as pool:
        # A Context may be entered by one thread at a time: each call gets its own copy.
        futures = [pool.submit(contextvars.copy_context().run, _observed, r, cancel, one) for r in requests]
        return [f.result() for f in futures]


def _in_process(req: ToolCallRequest, cancel: CancellationToken) -> ToolResultPart:
    try:
        t = resolve_tool(req)
    except Exception as exc:
        return error_part(req, str(exc))
    hooks = current_hooks()
    if hooks is None:
        return run_tool_guarded(t, req.call, list(req.messages), cancel, req.timeout, req.deps, req.channel,
                                req.principal)

    def runner(ctx: ToolCallContext) -> ToolResultPart:
        return run_tool_guarded(t, ctx.with_arguments(req.call), list(req.messages), cancel, req.timeout, req.deps,
                                ctx.tool_channel(), req.principal)

    return hooks.tool_call(ToolCallContext(None, req.call.id, req.call.name, req.call.arguments, t, runner=runner,
                                           channel=req.channel))


class ThreadExecutor:
    """Run every call on its own thread at once (at most ``max_concurrency``); results in call order.

    A call past its time limit, or cancelled, is answered at once with an error result; its thread is
    abandoned and the tool's :class:`~hookstream.CancellationToken` set, so a cooperative tool stops."""

    def __init__(self, max_concurrency: int | None = None) -> None:
        self.max_concurrency = max_concurrency

    def run(self, requests: Sequence[ToolCallRequest], cancel: CancellationToken) -> list[ToolResultPart]:
        # _in_process calls the run's tool-call hooks itself.
        if len(requests) <= 1:
            return [_in_process(r, cancel) for r in requests]
        workers = min(len(requests), self.max_concurrency or len(requests))
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hookstream-tool") as pool:
            futures = [pool.submit(contextvars.copy_context().run, _in_process, r, cancel) for r in requests]
            return [f.result() for f in futures]


class SequentialExecutor:
    """Run calls one by one on the calling thread."""

    def run(self, requests: Sequence[ToolCallRequest], cancel: CancellationToken) -> list[ToolResultPart]:
        return [_in_process(r, cancel) for r in requests]


class BoundedExecutor(ThreadExecutor):
    """Parallel, with at most ``max_concurrency`` calls at once (default 4)."""

    def __init__(self, max_concurrency: int = 4) -> None:
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        super().__init__(max_concurrency)


class ProcessExecutor:
    """Run each call in a worker process of its own; results in call order.

    Each call gets a one-worker :class:`concurrent.futures.ProcessPoolExecutor` (``start_method``:
    ``forkserver`` by default, or ``spawn``; never ``fork``, which copies the engine's threads and locks
    mid-run), so a call past its time limit or cancelled is stopped by killing exactly its process. The
    worker imports the tool from :attr:`ToolCallRequest.ref`: a closure or lambda tool gets the error
    result ``Error: 'name' cannot run in another process...`` without starting a process. Arguments go
    over as pickles and the result comes back as one (:class:`~hookstream.ToolResultPart`); a tool that
    raises, or a worker that dies, is an error result. ``max_concurrency`` bounds the processes at once
    (``None``: one per call). The tool receives a :class:`~hookstream.ToolContext` whose token is never
    set: a stopped call is killed, not asked; its ``deps`` is a pickled copy of the run's context, and a
    context that does not pickle gives the call the error result ``Error: 'name' cannot run in another
    process: its context (chat(context=...)) cannot be pickled: ...`` without starting a process.
    """

    def __init__(self, max_concurrency: int | None = None, start_method: str = "forkserver") -> None:
        if start_method not in ("forkserver", "spawn"):
            raise ValueError("start_method must be 'forkserver' or 'spawn'")
        if max_concurrency is not None and max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        self.max_concurrency = max_concurrency
        self.start_method = start_method

    def run(self, requests: Sequence[ToolCallRequest], cancel: CancellationToken) -> list[ToolResultPart]:
        return run_calls(requests, cancel, self._one, self.max_concurrency)

    def _one(self, req: ToolCallRequest, cancel: CancellationToken) -> ToolResultPart:
        if req.ref is None:
            return error_part(req, str(_lookup_error(req)))
        if req.deps is not None:
            problem = _unpicklable(req.deps)
            if problem is not None:
                return error_part(req, f"{req.name!r} cannot run in another process: its context "
                                       f"(chat(context=...), a {type(req.deps).__name__}) cannot be pickled: {problem}")
        wire = req.for_wire()
        limit = req.remaining()
        deadline = None if limit is None else time.monotonic() + limit
        # Imported here: multiprocessing and the process pool are only for this executor, and every process
        # that loads a tool executor plugin imports this module (hookstream replay included).
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        pool = ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context(self.start_method))
        try:
            # The worker's pid first, through the pool's own public API: before Python 3.14 the pool cannot
            # stop a running call, so a cancelled or timed-out call is stopped by killing this process.
            try:
                pid = pool.submit(os.getpid).result(timeout=deadline and max(0.0, deadline - time.monotonic()))
            except FutureTimeout:
                return timed_out(req)
            except Exception as exc:
                return error_part(req, f"{req.name!r} failed in its worker process: {type(exc).__name__}: {exc}")
            future: Future[ToolResultPart] = pool.submit(run_request, wire)
            while True:
                wait = _POLL if deadline is None else max(0.0, min(_POLL, deadline - time.monotonic()))
                try:
                    return future.result(timeout=wait)
                except FutureTimeout:
                    pass
                except Exception as exc:  # the worker died, or the request/result did not pickle
                    return error_part(req, f"{req.name!r} failed in its worker process: {type(exc).__name__}: {exc}")
                if cancel.cancelled:
                    _kill(pool, future, pid)
                    return cancelled(req)
                if deadline is not None and time.monotonic() >= deadline:
                    _kill(pool, future, pid)
                    return timed_out(req)
        finally:
            pool.shutdown(wait=False, cancel_futures=True)


def _unpicklable(value: Any) -> str | None:
    """Why ``value`` does not pickle, or ``None`` when it does."""
    import pickle

    try:
        pickle.dumps(value)
    except Exception as exc:  # PicklingError, TypeError ("cannot pickle '_thread.lock' object")...
        return f"{type(exc).__name__}: {exc}"
    return None


def _lookup_error(req: ToolCallRequest) -> LookupError:
    try:
        resolve_tool(req.for_wire())
    except LookupError as exc:
        return exc
    return LookupError(f"{req.name!r} cannot run in another process")


def _kill(pool: ProcessPoolExecutor, future: Future[Any], pid: int) -> None:
    """Stop the call: cancel it if it has not started, else kill the pool's one worker process (``pid``)."""
    if future.cancel():
        return
    kill = getattr(pool, "kill_workers", None)  # Python 3.14+
    if kill is not None:
        kill()
        return
    try:
        os.kill(pid, getattr(signal, "SIGKILL", signal.SIGTERM))
    except ProcessLookupError:
        pass  # it ended on its own meanwhile
