"""``hookstream.chat``: the entry point. Returns a pull-based :class:`ChatStream` of AG-UI events.

Nothing is sent until the stream is iterated; each event is read from the socket when the caller asks
for it, so a slow consumer slows the producer (natural backpressure) and no background thread reads
ahead. Tools run on executor threads between model calls.

Thread safety: iterate a ChatStream on one thread. :meth:`ChatStream.cancel` may be called from any
thread. :meth:`ChatStream.result` drains the stream on the calling thread if it was not consumed.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import requests

from .call import CallOptions
from .engine import Engine, EngineConfig, RunResult
from .events import BaseEvent, to_json
from .loop import Callbacks, RepairRequest, Resume, StepSettings, StepStart
from .memory import ConversationStore
from .messages import Message, ToolCallPart, coerce_messages
from .provider import Provider, Secret
from .registry import get_registry
from .stop import StopCondition
from .timeouts import Timeouts
from .tools import Tool, as_tools
from .transport import DEFAULT_MAX_EVENT_BYTES

__all__ = ["ChatStream", "Resume", "chat", "resolve_model"]


def resolve_model(
    model: str, *, base_url: str | None = None, api_key: str | Secret | None = None
) -> Provider:
    """``"provider:model"`` (e.g. ``"openai:gpt-4o-mini"``) to a provider instance.

    Raises :class:`ValueError` without a provider prefix and
    :class:`~hookstream.errors.UnknownPluginError` for a provider no plugin registered.
    """
    name, sep, model_name = model.partition(":")
    if not sep or not name or not model_name:
        raise ValueError(f"model must be 'PROVIDER:MODEL' (e.g. 'openai:gpt-4o-mini'), got {model!r}")
    provider_cls = get_registry().provider(name)
    return provider_cls(model_name, base_url=base_url, api_key=api_key)


def _stop_conditions(stop_when: Iterable[Any] | None) -> list[StopCondition]:
    out: list[StopCondition] = []
    reg = get_registry()
    for item in stop_when or ():
        if callable(item):
            out.append(item)
        else:
            name, *args = (item,) if isinstance(item, str) else item
            out.append(reg.get("stop_conditions", name)(*args))
    return out


class ChatStream:
    """The events of one run; iterate it, then read :meth:`result`."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._iter: Iterator[BaseEvent] | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()

    def __iter__(self) -> Iterator[BaseEvent]:
        with self._lock:
            if self._iter is not None:
                raise RuntimeError("a ChatStream can be iterated only once")
            self._iter = self._engine.events()
        try:
            yield from self._iter
        finally:
            self._done.set()

    def cancel(self) -> None:
        """Cancel from any thread; the stream ends with ``RUN_FINISHED`` outcome ``cancelled`` and
        :meth:`result` keeps every text and tool result produced so far."""
        self._engine.cancel()

    def result(self) -> RunResult:
        """The run's result; consumes the rest of the stream first when it was not iterated to the end."""
        with self._lock:
            started = self._iter is not None
        if not started:
            for _ in self:
                pass
        elif not self._done.is_set():
            # Iteration started elsewhere and stopped early: close it so the connection is released.
            self._iter.close()  # type: ignore[union-attr]
        return self._engine.result()

    def to_sse(self) -> Iterator[bytes]:
        """The run as AG-UI over SSE: each event as ``data: {json}\n\n`` bytes (camelCase JSON,
        ``RUN_STARTED`` with ``protocolVersion``, usage on ``RUN_FINISHED``), for a streaming HTTP body."""
        from .agui import to_sse

        return to_sse(self)

    def to_json_lines(self) -> Iterator[str]:
        """Each event as one line of AG-UI JSON."""
        for ev in self:
            yield to_json(ev)

    @property
    def engine(self) -> Engine:
        return self._engine


def _executor(executor: str | tuple[Any, ...] | Any) -> Any:
    if isinstance(executor, str):
        return get_registry().get("tool_executors", executor)()
    if isinstance(executor, tuple):
        name, *args = executor
        return get_registry().get("tool_executors", name)(*args)
    return executor


def chat(
    model: str,
    messages_or_prompt: str | Message | Iterable[Message | dict[str, Any]] | None = None,
    *,
    tools: Iterable[Tool | Callable[..., Any] | dict[str, Any]] | None = None,
    system: str | None = None,
    max_steps: int = 10,
    base_url: str | None = None,
    api_key: str | Secret | None = None,
    tool_choice: str | dict[str, Any] | None = None,
    max_tokens: int | None = None,
    temperature: float | None = None,
    options: dict[str, Any] | None = None,
    executor: str | Any = "thread",
    stop_when: Iterable[Any] | None = None,
    connect_timeout: float | None = 10.0,
    read_timeout: float | None = 300.0,
    session: requests.Session | None = None,
    thread_id: str | None = None,
    run_id: str | None = None,
    prepare_step: Callable[[StepStart], StepSettings | dict[str, Any] | None] | None = None,
    repair_tool_call: Callable[[RepairRequest], ToolCallPart | None] | None = None,
    approve: Callable[[ToolCallPart], bool] | None = None,
    resume: Resume | dict[str, Any] | list[dict[str, Any]] | None = None,
    stream_tool_call_responses: bool = True,
    memory: ConversationStore | None = None,
    timeouts: Timeouts | dict[str, Any] | None = None,
    max_retries: int = 2,
    max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
    on_chunk: Callable[[BaseEvent], None] | None = None,
    on_step_start: Callable[[StepStart], None] | None = None,
    on_step_finish: Callable[[Any], None] | None = None,
    on_finish: Callable[[RunResult], None] | None = None,
    on_error: Callable[[BaseException], None] | None = None,
    on_abort: Callable[[RunResult], None] | None = None,
) -> ChatStream:
    """Start a chat run and return its :class:`ChatStream` (nothing is sent until it is iterated).

    ``model`` is ``"PROVIDER:MODEL"``. ``messages_or_prompt`` is a prompt string, a
    :class:`~hookstream.messages.Message`, or a list of messages / ``{"role", "content"}`` dicts.
    ``tools`` are functions (schema from signature and docstring), :class:`~hookstream.tools.Tool`
    objects or ``{"name", "description", "parameters"}`` dicts. ``max_steps`` bounds model calls.
    ``base_url`` is the API root (``http://host/v1`` for OpenAI, ``http://host`` for Anthropic and
    Gemini); ``api_key`` defaults to the provider's environment variable (``OPENAI_API_KEY``...); with
    neither, a run against the provider's own endpoint ends at once with ``RUN_ERROR``
    ``missing_api_key`` naming the variable (a custom ``base_url`` is called without a key).
    ``executor`` is a tool-executor name (``thread``, ``sequential``, ``bounded``), ``("bounded", 2)``
    or an object; ``stop_when`` holds stop conditions as callables or ``("name", *args)``
    (``step_count_is``, ``has_tool_call``, ``finish_reason_is``, ``total_tokens_exceed``).

    Agent loop (see ``docs/agent-loop.md``): ``prepare_step`` may change each step's model, tools,
    ``tool_choice``, active tools, system prompt and messages; ``repair_tool_call`` fixes an unknown
    tool or invalid input; ``approve(call) -> bool`` decides tools that need approval (without it the
    run ends with an ``interrupt`` outcome and ``chat(model, resume=result.resume({...}))`` continues
    it; client tools resume the same way with ``tool_outputs``; ``resume`` is a
    :class:`~hookstream.loop.Resume`, a dict of its fields, or AG-UI ``RunAgentInput.resume``
    entries); ``stream_tool_call_responses=False``
    streams only the final answer; ``memory`` loads/saves the conversation under ``thread_id``.
    Callbacks ``on_chunk``, ``on_step_start``, ``on_step_finish``, ``on_finish``, ``on_error`` and
    ``on_abort`` fire on success, error and abort alike.

    Limits: ``timeouts`` (a :class:`~hookstream.timeouts.Timeouts` or dict: ``connect``, ``read``,
    ``first_event``, ``idle``, ``step``, ``run``, ``tool`` seconds) replaces ``connect_timeout`` and
    ``read_timeout`` when given; ``max_retries`` retries connect errors and HTTP 408/409/429/5xx
    before the first byte, and an in-stream overload or rate-limit error before any content (backoff
    with jitter, ``Retry-After`` honoured and shown in the error message). ``max_event_bytes`` bounds
    one SSE event (bytes, default 16 MiB): a longer one ends the run with ``RUN_ERROR``
    ``line_too_long``.

    Raises :class:`ValueError` for a malformed ``model`` or no messages, and
    :class:`~hookstream.errors.UnknownPluginError` for an unknown provider or executor. Errors during
    the run do not raise: they end the stream with ``RUN_ERROR`` and are kept in ``result().error``.
    """
    provider = resolve_model(model, base_url=base_url, api_key=api_key)
    if resume is not None:
        resume = Resume.coerce(resume)
    if messages_or_prompt is None:
        if resume is None or resume.messages is None:
            raise ValueError("chat() needs messages_or_prompt (or resume= with the interrupted run's messages)")
        msgs: list[Message] = []
    else:
        msgs = coerce_messages(messages_or_prompt)
    if system is not None and not any(m.role == "system" for m in msgs[:1]):
        msgs.insert(0, Message.system(system))
    limits = Timeouts.coerce(timeouts) if timeouts is not None else Timeouts(connect_timeout, read_timeout)
    config = EngineConfig(
        model=provider.model,
        tools=as_tools(tools),
        max_steps=max_steps,
        tool_choice=tool_choice,
        max_tokens=max_tokens,
        temperature=temperature,
        options=dict(options or {}),
        executor=_executor(executor),
        stop_when=_stop_conditions(stop_when),
        call_options=CallOptions(connect_timeout=limits.connect, read_timeout=limits.read, max_retries=max_retries,
                                 max_event_bytes=max_event_bytes),
        prepare_step=prepare_step,
        repair_tool_call=repair_tool_call,
        approve=approve,
        stream_tool_call_responses=stream_tool_call_responses,
        memory=memory,
        callbacks=Callbacks(on_chunk, on_step_start, on_step_finish, on_finish, on_error, on_abort),
        timeouts=limits,
        resume=resume,
    )
    if thread_id:
        config.thread_id = thread_id
    if run_id:
        config.run_id = run_id
    return ChatStream(Engine(provider, msgs, config, session=session))
