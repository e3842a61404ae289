"""Tools: plain Python functions (schema from the signature and docstring) or explicit JSON Schema.

:func:`tool` turns a function into a :class:`Tool`; :func:`as_tools` accepts functions, Tool objects and
``{"name", "description", "parameters"}`` dicts. Parameter annotations map to JSON Schema in
:mod:`hookstream._agentloop.tool_schema` (enums, literals, unions, containers, dataclasses, attrs classes,
``TypedDict``); one with no mapping is a :class:`~hookstream.errors.ToolDefinitionError` here, at
definition time. :func:`run_tool` structures the arguments back into those types (cattrs), executes one
tool call and always returns a :class:`~hookstream.ToolResultPart`: a tool that raises, returns
something that is not JSON serialisable, or is asked with arguments that did not parse or do not
structure gives an error result the model receives, never an exception in the caller.
:func:`validate_input` checks arguments against the tool's JSON Schema with the ``jsonschema`` library
(the dialect the schema's ``$schema`` names, else the latest). :func:`run_tool_guarded` adds the
per-tool timeout and cancellation: the tool runs on its own daemon thread; past its time limit (or on
cancellation) the caller gets an error result at once, the thread is abandoned and its
:class:`CancellationToken` is set so a cooperative tool can stop.

Thread safety: a Tool is immutable configuration and may be shared; its function runs on executor
threads, so it must be thread-safe itself when several calls may run at once.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import json
import logging
import queue
import sys
import threading
import time
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar, cast, get_args, get_origin

import attrs

from .._errors import ToolDefinitionError
from .._events import BaseEvent, Usage
from .._messages import FilePart, Message, ToolCallPart, ToolResultPart
from .._principal import Principal
from .._stream.provider import ToolSpec
from .thread_pool import POOL
from .tool_schema import Unsupported, describe, doc_params, json_default, schema_for

__all__ = [
    "CancellationToken",
    "Tool",
    "ToolChannel",
    "ToolContext",
    "as_tools",
    "needs_approval",
    "run_tool",
    "run_tool_guarded",
    "schema_from_function",
    "tool",
    "validate_input",
]


class CancellationToken:
    """Set when the run is cancelled or the tool's time limit passed; a tool polls :attr:`cancelled` or
    waits on :meth:`wait`, or registers a callback with :meth:`on_cancel`. ``reason`` says why
    (``"cancelled"``, ``"timeout"``). Safe from any thread."""

    __slots__ = ("_callbacks", "_event", "_lock", "reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str = "cancelled") -> None:
        with self._lock:
            if self.reason is None:
                self.reason = reason
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            try:
                fn()
            except Exception:  # a callback must not stop the others (nor the canceller)
                logging.getLogger("hookstream.tools").exception("cancellation callback failed")

    def on_cancel(self, fn: Callable[[], None]) -> None:
        """Call ``fn()`` once when the token is set, on the thread that sets it (at once, here, when it
        is set already). For a tool that waits on something it can stop: a sub-agent's stream, a
        subprocess."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(fn)
                return
        fn()

    def wait(self, timeout: float | None = None) -> bool:
        """Block up to ``timeout`` seconds; True when cancelled."""
        return self._event.wait(timeout)


DepsT = TypeVar("DepsT")


class ToolChannel:
    """What the tools of one step send to their run while they run, in-process: AG-UI events the run
    streams at once (a sub-agent's nested run, see :class:`~hookstream.Agent`) and token usage it adds to
    its own. The tool phase drains it on the run's thread while it waits for the executor
    (``hookstream._agentloop.tool_phase``). ``run_id`` and ``thread_id`` are the run's.

    Thread safety: :meth:`emit` and :meth:`add_usage` may be called from any thread; what arrives after
    the tool phase stopped reading (an abandoned tool) is dropped.
    """

    __slots__ = ("_closed", "_queue", "run_id", "thread_id")

    def __init__(self, run_id: str, thread_id: str) -> None:
        self.run_id = run_id
        self.thread_id = thread_id
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._closed = False

    def emit(self, event: BaseEvent) -> bool:
        """Stream ``event`` in the run now; ``False`` when the run no longer listens."""
        if self._closed:
            return False
        self._queue.put(event)
        return True

    def add_usage(self, usage: Usage) -> bool:
        """Add ``usage`` to the run's (``RunResult.usage``, ``RUN_FINISHED.usage``)."""
        if self._closed:
            return False
        self._queue.put(usage)
        return True

    def get(self, timeout: float | None = None) -> Any:
        """The next item (an event, a :class:`~hookstream.events.Usage`, or what :meth:`put_marker` put);
        raises :class:`queue.Empty` after ``timeout`` seconds. For the reader only."""
        return self._queue.get(timeout=timeout)

    def put_marker(self, marker: object) -> None:
        """Put a reader's own marker (the executor finished) in the queue."""
        self._queue.put(marker)

    def close(self) -> None:
        """Stop accepting items (the reader is done)."""
        self._closed = True

    def tapped(self, taps: list[Callable[[Any], None]]) -> ToolChannel:
        """A view of this channel for one tool call: what the run took from it (an event, a
        :class:`~hookstream.events.Usage`) is also handed to each of ``taps``, in order, on the caller's
        thread (``ToolCallContext.on_stream``). A tap that raises is logged; the tool goes on."""
        return _TappedChannel(self, taps)


class _TappedChannel(ToolChannel):
    __slots__ = ("_inner", "_taps")

    def __init__(self, inner: ToolChannel, taps: list[Callable[[Any], None]]) -> None:
        # Not the base __init__: a view reads, writes and closes ``inner``'s queue, so one of its own (built
        # per tapped tool call) would never be used.
        self.run_id, self.thread_id = inner.run_id, inner.thread_id
        self._inner, self._taps = inner, taps

    def _took(self, item: Any, took: bool) -> bool:
        if took:  # only what the run streams: a replay must not add what nobody saw
            for tap in self._taps:
                try:
                    tap(item)
                except Exception:
                    logging.getLogger("hookstream.tools").exception("a tool call's stream tap %r failed", tap)
        return took

    def emit(self, event: BaseEvent) -> bool:
        return self._took(event, self._inner.emit(event))

    def add_usage(self, usage: Usage) -> bool:
        return self._took(usage, self._inner.add_usage(usage))

    def get(self, timeout: float | None = None) -> Any:
        return self._inner.get(timeout)

    def put_marker(self, marker: object) -> None:
        self._inner.put_marker(marker)

    def close(self) -> None:
        self._inner.close()


@attrs.define(slots=True)
class ToolContext(Generic[DepsT]):
    """What a tool may receive (declare a parameter annotated ``ToolContext`` or ``ToolContext[T]``): the
    ``tool_call_id``, the conversation ``messages`` so far, a ``cancellation`` token to poll, and
    ``deps``, the application's own context object given to ``chat(..., context=obj)`` (a database
    handle, the current user; typed ``T``; ``None`` without one). The parameter never enters the tool's
    JSON schema.

    ``deps`` is the very object the caller passed for in-process executors (``thread``, ``sequential``,
    ``bounded``), shared by every tool call of the run, possibly on several threads at once: what it
    does must be safe for that. For ``process`` (and ``ray``) it is pickled with each call and the tool
    gets a copy; one that cannot be pickled gives that call an error result.

    In-process (``thread``, ``sequential``, ``bounded``) a tool may also stream AG-UI events in the run
    while it runs (:meth:`emit`) and add token usage to the run's (:meth:`add_usage`), as an agent used
    as a tool does (:meth:`hookstream.Agent.as_tool`); ``run_id``/``thread_id`` are then the run's. In
    another process both return ``False`` and ``run_id`` is ``None``.

    ``principal`` is who the run is for: the :class:`~hookstream.server.Principal` (``id`` and verified
    ``claims``: roles, tenant...) the server authenticated for a served run, the one a durable run kept
    for its recovered copy; ``None`` outside a server (a plain ``chat()``, ``LoopSettings.principal``
    unset) or on a server without authentication. It comes from the server's authenticator only, never
    from the request body. Frozen, but ``claims`` is the authenticator's mapping (a dict), shared by the
    run's threads: read it, never change it. ``process`` and ``ray`` executors get a pickled copy.
    """

    tool_call_id: str
    messages: list[Message]
    cancellation: CancellationToken
    deps: DepsT = attrs.field(default=cast("Any", None))
    channel: ToolChannel | None = attrs.field(default=None, repr=False)
    principal: Principal | None = attrs.field(default=None, repr=False)

    @property
    def run_id(self) -> str | None:
        return self.channel.run_id if self.channel is not None else None

    @property
    def thread_id(self) -> str | None:
        return self.channel.thread_id if self.channel is not None else None

    def emit(self, event: BaseEvent) -> bool:
        """Stream ``event`` in the run now, before this call's ``TOOL_CALL_RESULT`` (events of a nested
        run carry ``subagent_run_id``); ``False`` when that is not possible (another process, or the run
        stopped waiting for this call). The event must keep the run's AG-UI grammar."""
        return self.channel.emit(event) if self.channel is not None else False

    def add_usage(self, usage: Usage) -> bool:
        """Add ``usage`` (a sub-agent's tokens) to the run's; ``False`` when that is not possible."""
        return self.channel.add_usage(usage) if self.channel is not None else False


@attrs.define(slots=True, frozen=True)
class Tool:
    """A tool the model may call.

    ``parameters`` is a JSON Schema object. ``fn`` is called with the parsed arguments as keyword
    arguments (plus ``ToolContext`` when it asks for one); ``fn=None`` makes a client tool, run by
    the caller. ``timeout`` is seconds. ``needs_approval`` is a bool or a predicate on the arguments.
    ``max_output_chars`` bounds the output's text (JSON text for structured output): a larger output
    becomes an error result, never a megabytes-long message to the model. ``argument_types`` maps
    parameter names to the annotations their JSON arguments are structured into (cattrs) before ``fn``
    is called: an ``Enum`` parameter gets the member, a dataclass parameter the instance; :func:`tool`
    fills it from the signature, an empty mapping passes the arguments as parsed. ``resources`` is what one
    call needs from an executor that schedules work (``{"num_cpus": 2, "num_gpus": 1, "memory": bytes}``
    for ``executor="ray"``); in-process executors ignore it.
    """

    name: str
    description: str = ""
    parameters: dict[str, Any] = attrs.Factory(lambda: {"type": "object", "properties": {}})
    fn: Callable[..., Any] | None = None
    needs_approval: bool | Callable[[dict[str, Any]], bool] = False
    return_direct: bool = False
    timeout: float | None = None
    context_param: str | None = None
    max_output_chars: int = 1_000_000
    argument_types: dict[str, Any] = attrs.Factory(dict)
    resources: dict[str, float] = attrs.Factory(dict)

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.parameters)


def _annotation(fn: Callable[..., Any], name: str, param: inspect.Parameter) -> Any:
    """``param``'s annotation with string annotations (postponed, or forward references inside) resolved in
    ``fn``'s module, one parameter at a time so an unresolvable return annotation does not matter here."""
    annotation = param.annotation
    if annotation is inspect.Parameter.empty:
        return annotation
    target: Any = inspect.unwrap(fn)
    while isinstance(target, functools.partial):
        target = target.func
    # A callable object has no __globals__: its class's module is where its annotations were written.
    module = sys.modules.get(getattr(target, "__module__", None) or "")
    globalns = getattr(target, "__globals__", None) or (vars(module) if module else {})
    holder = types.SimpleNamespace(__annotations__={name: annotation})
    try:
        return typing.get_type_hints(holder, globalns=globalns, include_extras=True)[name]
    except Exception as exc:
        raise ToolDefinitionError(_fn_name(fn), name, annotation,
                                  f"it does not resolve ({type(exc).__name__}: {exc})") from None


def _is_union(annotation: Any) -> bool:
    return get_origin(annotation) in (typing.Union, types.UnionType)


def _is_context(annotation: Any) -> bool:
    """``ToolContext``, ``ToolContext[T]``, or a union holding one (``ToolContext[T] | None``)."""
    if annotation is ToolContext or get_origin(annotation) is ToolContext:
        return True
    return _is_union(annotation) and any(_is_context(a) for a in get_args(annotation))


def _fn_name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def _read_function(
    fn: Callable[..., Any], *, strict: bool = True
) -> tuple[str, dict[str, Any], str | None, dict[str, Any]]:
    """(description, parameters schema, ToolContext parameter, {parameter: annotation to structure into}).

    ``strict=False`` (the caller brings its own schema) skips parameters whose annotation has no schema
    instead of raising :class:`ToolDefinitionError`; they are passed through as parsed.
    """
    sig = inspect.signature(fn)
    description, docs = doc_params(fn.__doc__ or "")
    props: dict[str, Any] = {}
    required: list[str] = []
    context_param = None
    argument_types: dict[str, Any] = {}
    open_ended = False
    for name, param in sig.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            open_ended = open_ended or param.kind is param.VAR_KEYWORD
            continue
        try:
            annotation = _annotation(fn, name, param)
        except ToolDefinitionError:
            if strict:
                raise
            continue
        if _is_context(annotation):
            context_param = name
            continue
        if annotation is inspect.Parameter.empty:
            schema: dict[str, Any] = {}  # no annotation: any JSON value, passed as parsed
        else:
            try:
                schema = schema_for(annotation, (name,))
            except Unsupported as exc:
                if strict:
                    raise ToolDefinitionError(_fn_name(fn), name, exc.annotation, exc.reason, exc.path) from None
                continue
            if schema:  # Any/object: nothing to structure
                argument_types[name] = annotation
        describe(schema, annotation, docs.get(name))
        if param.default is not inspect.Parameter.empty:
            show, value = json_default(param.default)
            if show:
                schema["default"] = value
        else:
            required.append(name)
        props[name] = schema
    parameters: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        parameters["required"] = required
    if not open_ended:
        # Extra arguments would fail the call with a TypeError anyway; say so in the schema (OpenAI strict mode
        # wants it too).
        parameters["additionalProperties"] = False
    return description, parameters, context_param, argument_types


def schema_from_function(fn: Callable[..., Any]) -> tuple[str, dict[str, Any], str | None]:
    """(description, JSON Schema of the parameters, name of a ToolContext parameter or None).

    The description is the docstring's summary; parameter descriptions come from its ``Args:`` section
    (or ``:param x:`` lines, or ``Annotated[X, "text"]``). Parameters without a default are required; the
    object has ``additionalProperties: false`` unless ``fn`` takes ``**kwargs``. Annotations map as
    described in :mod:`hookstream._agentloop.tool_schema` (JSON scalars, ``Enum``, ``Literal``, ``X | None``,
    ``list``/``tuple``/``set``/``dict[str, X]``, dataclasses, attrs classes, ``TypedDict``); a parameter
    without annotation accepts any JSON value (``{}``). Raises :class:`~hookstream.errors.ToolDefinitionError`
    for an annotation with no JSON Schema (a bare class, a ``Callable``, ``dict[int, X]``...).
    """
    description, parameters, context_param, _ = _read_function(fn)
    return description, parameters, context_param


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: dict[str, Any] | None = None,
    needs_approval: bool | Callable[[dict[str, Any]], bool] = False,
    return_direct: bool = False,
    timeout: float | None = None,
    resources: dict[str, float] | None = None,
) -> Any:
    """Make a :class:`Tool` from ``fn``; usable as ``@tool`` or ``@tool(name=..., timeout=...)``.

    ``parameters`` (a JSON Schema) replaces the schema read from the signature; arguments are still
    structured into the annotations that have a schema mapping, the others are passed as parsed. Raises
    :class:`~hookstream.errors.ToolDefinitionError` for an annotation with no JSON Schema (see
    :func:`schema_from_function`).
    """

    def make(f: Callable[..., Any]) -> Tool:
        desc, schema, ctx, argument_types = _read_function(f, strict=parameters is None)
        return Tool(
            name or getattr(f, "__name__", None) or type(f).__name__,
            description if description is not None else desc,
            parameters if parameters is not None else schema,
            f,
            needs_approval,
            return_direct,
            timeout,
            ctx,
            argument_types=argument_types,
            resources=dict(resources or {}),
        )

    return make(fn) if fn is not None else make


def as_tools(tools: Iterable[Tool | Callable[..., Any] | dict[str, Any]] | None) -> dict[str, Tool]:
    """Tools by name. A dict ``{"name", "description", "parameters"}`` without a function is a client
    tool. Raises :class:`ValueError` on a duplicate name and
    :class:`~hookstream.errors.ToolDefinitionError` for a function parameter with no JSON Schema."""
    out: dict[str, Tool] = {}
    for item in tools or ():
        if isinstance(item, Tool):
            t = item
        elif isinstance(item, dict):
            t = Tool(item["name"], item.get("description", ""), item.get("parameters") or {"type": "object"},
                     item.get("fn"))
        elif callable(item):
            t = tool(item)
        else:
            raise TypeError(f"not a tool: {item!r}")
        if t.name in out:
            raise ValueError(f"two tools named {t.name!r}")
        out[t.name] = t
    return out


def run_tool(t: Tool | None, call: ToolCallPart, context: ToolContext[Any]) -> ToolResultPart:
    """Execute ``call`` with ``t`` and return its result part (``is_error`` on any failure).

    Arguments are first structured into ``t.argument_types`` (cattrs); a value that does not fit gives
    ``Error: invalid input for 'name': <problem> @ <path>``, the wording of the engine's schema check.
    The output must be JSON serialisable; it is checked here so the provider request cannot fail later.

    A tool may return a :class:`~hookstream.FilePart` (a screenshot) or a list mixing JSON values and
    FileParts: the files go to ``ToolResultPart.files`` (sent in each provider's form for tool-result
    files) and the rest is the ``output``: ``""`` when there is nothing else, the one value when there
    is one, else the list of values. ``max_output_chars`` counts the output, not the files.
    """
    def error(text: str) -> ToolResultPart:
        return ToolResultPart(call.id, call.name, text, is_error=True)

    if t is None:
        return error(f"Error: unknown tool {call.name!r}")
    if call.arguments is None:
        raw = (call.arguments_raw or "")[:200]
        return error(f"Error: the arguments for {call.name!r} were not valid JSON: {raw!r}")
    if t.fn is None:
        return error(f"Error: {call.name!r} is a client tool and cannot run here")
    if t.argument_types:
        # cattrs converts, it does not check JSON shapes (it would iterate a string given for a list): only
        # arguments that fit the schema reach it. The engine checked already; a direct call has not.
        problem = validate_input(t, call.arguments)
        if problem:
            return error(f"Error: invalid input for {call.name!r}: {problem}")
    # Imported by the first tool call: cattrs and the converter's hooks were most of this module's import,
    # which every process loading a tool executor plugin paid (hookstream replay included).
    from .tool_args import structure

    kwargs = dict(call.arguments)
    problems: list[str] = []
    for param, annotation in t.argument_types.items():
        if param in kwargs:
            kwargs[param], found = structure(kwargs[param], annotation, param)
            problems += found
    if problems:
        return error(f"Error: invalid input for {call.name!r}: {'; '.join(problems)}")
    if t.context_param:
        kwargs[t.context_param] = context
    try:
        output = t.fn(**kwargs)
    except Exception as exc:  # the model gets the failure as a result; the run goes on
        return error(f"Error: {type(exc).__name__}: {exc}")
    output, files = split_files(output)
    try:
        size = len(output) if isinstance(output, str) else len(json.dumps(output))
    except (TypeError, ValueError) as exc:
        return error(f"Error: tool output is not JSON serialisable ({exc})")
    if size > t.max_output_chars:
        # A runaway output would be sent to the model on every later step: refuse it clearly instead.
        return error(f"Error: tool output is {size} characters, over this tool's limit of {t.max_output_chars}")
    return ToolResultPart(call.id, call.name, output, files=files)


def split_files(output: Any) -> tuple[Any, list[FilePart]]:
    """``(output, files)`` of a tool's return value: FileParts (alone or in a list) come out as
    ``files``; what remains is ``""`` (only files), the single remaining value, or the list."""
    if isinstance(output, FilePart):
        return "", [output]
    if isinstance(output, list) and any(isinstance(x, FilePart) for x in output):
        files = [x for x in output if isinstance(x, FilePart)]
        rest = [x for x in output if not isinstance(x, FilePart)]
        return ("" if not rest else rest[0] if len(rest) == 1 else rest), files
    return output, []


@functools.lru_cache(maxsize=256)
def _validator(schema_json: str) -> Any:
    """The validator of a tool's schema (given as canonical JSON: the cache key), or why the schema is
    invalid. Checking a schema against its metaschema cost a quarter of a server's CPU per run when it
    was done for every call (py-spy, ``benchmarks/bench_serve.py``); a validator is immutable and may
    be used by many threads at once."""
    # Imported on the first validation: jsonschema (with referencing and its format checkers) is most of
    # this module's import time, paid otherwise by every process that merely loads a tool executor plugin.
    import jsonschema.exceptions
    import jsonschema.validators

    schema = json.loads(schema_json)
    cls = jsonschema.validators.validator_for(schema)
    try:
        cls.check_schema(schema)
    except jsonschema.exceptions.SchemaError as exc:
        return f"the tool's own schema is invalid: {exc.message}"
    return cls(schema)


def validate_input(t: Tool, arguments: dict[str, Any] | None) -> str | None:
    """Why ``arguments`` do not fit ``t.parameters`` (a readable message naming the path), or None.

    Uses ``jsonschema`` (the best-matching error of the schema's own draft). A schema that is itself
    invalid is reported the same way, so the model gets an error result instead of the run failing.
    """
    if arguments is None:
        return "the arguments are not a JSON object"
    import jsonschema.exceptions

    validator = _validator(json.dumps(t.parameters or {}, sort_keys=True, default=repr))
    if isinstance(validator, str):
        return validator
    error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{error.message} (at {where})" if where else error.message


def needs_approval(t: Tool, arguments: dict[str, Any] | None) -> bool:
    """Whether a call of ``t`` with ``arguments`` waits for approval (``needs_approval`` bool or predicate).

    A predicate that raises asks for approval: when in doubt, ask.
    """
    rule = t.needs_approval
    if callable(rule):
        try:
            return bool(rule(dict(arguments or {})))
        except Exception:
            return True
    return bool(rule)


LEFT_RUNNING = "left_running"
"""``ToolResultPart.provider_metadata["hookstream"]`` key marking a result given while the tool's thread
still ran: the run stopped waiting for it (cancel, time limit); ``RunResult.tools_left_running`` lists them."""


def _left(done: threading.Event, result: ToolResultPart) -> ToolResultPart:
    """``result``, marked when the tool has not set ``done`` (is still running): it is abandoned, not stopped."""
    if not done.is_set():
        result.provider_metadata = {"hookstream": {LEFT_RUNNING: True}}
    return result


_POLL = 0.01  # seconds between checks of the run's token while a tool runs: bounds cancel latency


def run_tool_guarded(
    t: Tool, call: ToolCallPart, messages: list[Message], run_token: CancellationToken, timeout: float | None,
    deps: Any = None, channel: ToolChannel | None = None, principal: Principal | None = None,
) -> ToolResultPart:
    """Run ``call`` on a daemon thread (of :data:`~hookstream._agentloop.thread_pool.POOL`) and wait for it
    at most ``timeout`` seconds (``None``: no limit).

    Returns the tool's result, or an error result when the time limit passes (``"timed out after N s"``)
    or ``run_token`` is cancelled (``"cancelled"``); the tool's own token is then set and its thread
    abandoned. The wait checks ``run_token`` every 10 ms, so cancellation is seen within that.

    The tool's thread runs in a copy of the caller's :mod:`contextvars` context (an OpenTelemetry current
    span is the parent there too). The run's ``hookstream_tool_call`` hooks go around it on the caller's
    thread (:mod:`hookstream._agentloop.executors`). ``deps`` is
    the run's application context (:attr:`ToolContext.deps`), ``channel`` the run's
    :class:`ToolChannel` (:meth:`ToolContext.emit`), ``principal`` who it is for (:attr:`ToolContext.principal`).
    """
    return _run_guarded(t, call, messages, run_token, timeout, deps, channel, principal)


def _run_guarded(
    t: Tool, call: ToolCallPart, messages: list[Message], run_token: CancellationToken, timeout: float | None,
    deps: Any, channel: ToolChannel | None, principal: Principal | None,
) -> ToolResultPart:
    token = CancellationToken()
    done = threading.Event()
    box: list[ToolResultPart] = []

    def target() -> None:
        try:
            box.append(run_tool(t, call, ToolContext(call.id, messages, token, deps, channel, principal)))
        finally:
            done.set()

    ctx = contextvars.copy_context()
    POOL.submit(functools.partial(ctx.run, target), f"hookstream-tool-{t.name}")
    deadline = None if timeout is None else time.monotonic() + timeout
    while not done.wait(_POLL if deadline is None else max(0.0, min(_POLL, deadline - time.monotonic()))):
        if run_token.cancelled:
            token.cancel(run_token.reason or "cancelled")
            return _left(done, ToolResultPart(call.id, call.name, f"Error: {call.name!r} was cancelled",
                                                is_error=True))
        if deadline is not None and time.monotonic() >= deadline:
            token.cancel("timeout")
            return _left(done, ToolResultPart(
                call.id, call.name, f"Error: {call.name!r} timed out after {timeout:g} s", is_error=True
            ))
    return box[0] if box else ToolResultPart(call.id, call.name, f"Error: {call.name!r} stopped", is_error=True)
