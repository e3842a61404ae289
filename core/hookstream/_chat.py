"""The entry point: :func:`chat` starts a run and returns a pull-based :class:`ChatStream` of AG-UI
events; :func:`get_model` builds a provider object once (base URL, API key, connection pool).

Nothing is sent until the stream is iterated; each event is read from the socket when the caller asks
for it, so a slow consumer slows the producer (natural backpressure) and no background thread reads
ahead. Tools run on executor threads between model calls.

Thread safety: iterate a ChatStream on one thread. :meth:`ChatStream.cancel` and
:meth:`ChatStream.add_message` may be called from any thread. :meth:`ChatStream.result` drains the
stream on the calling thread if it was not consumed. A provider from :func:`get_model` may be shared by
runs on many threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import requests

from ._agentloop.builtin_plugins import CallbacksPlugin, PrepareStep
from ._agentloop.engine import MAX_QUEUED_MESSAGES, Engine, RunPlan
from ._agentloop.executors import ToolExecutor
from ._agentloop.stop import StopCondition
from ._agentloop.structured import resolve_output
from ._agentloop.values import Resume, RunResult
from ._events import BaseEvent, TextMessageContent, to_json, to_sse
from ._ids import new_id
from ._messages import Message, coerce_messages
from ._registry import get_registry
from ._secrets import Secret
from ._settings import RunSettings
from ._stores.history import History, summary_request
from ._stream.call import CallOptions
from ._stream.fallback import FallbackModel
from ._stream.provider import Provider

__all__ = ["ChatStream", "chat", "get_model", "run_plan"]

ExecutorSpec = str | tuple[Any, ...] | ToolExecutor
"""A tool executor: a registered name (``"thread"``), ``(name, *args)`` or an executor object."""

StopSpec = StopCondition | str | tuple[Any, ...]
"""A stop condition: a callable, a registered name, or ``(name, *args)`` such as ``("step_count_is", 3)``."""


def get_model(
    model: str | Provider,
    *,
    base_url: str | None = None,
    api_key: str | Secret | None = None,
    session: requests.Session | None = None,
    **options: Any,
) -> Provider:
    """A provider object for ``"PROVIDER:MODEL"`` (e.g. ``"openai:gpt-4o-mini"``), built once and
    passed to any number of :func:`chat` calls, which then share its connection pool.

    ``base_url`` is the API root (``http://host/v1`` for OpenAI and compatible servers, ``http://host``
    for Anthropic and Gemini; ``None``: the provider's own endpoint). ``api_key`` defaults to the
    provider's environment variable (``OPENAI_API_KEY``...); it is kept as a
    :class:`~hookstream.plugin.Secret`. ``session`` is a ``requests.Session`` to use (its owner closes it);
    without one the provider opens its own on first use. ``options`` are the provider's own keyword
    arguments (``vertex``: ``project``, ``location``, ``credentials``; ``bedrock``: ``region``,
    ``profile``; see each provider's page under ``docs/providers/``).

    A provider object (say a :class:`~hookstream.FallbackModel`) is returned as it is, so code that
    takes ``"PROVIDER:MODEL"`` and calls ``get_model`` (``chat_factory``, ``make_app``) takes one too;
    ``base_url``, ``api_key``, ``session`` and ``options`` must then be unset.

    ``"test"`` is the offline test model (:class:`hookstream.testing.TestProvider`: deterministic replies,
    scripted with ``replies=[...]``, no network).

    Raises :class:`TypeError` for an option the provider does not take, :class:`ValueError` without a
    provider prefix (or with settings beside a provider object) and :class:`~hookstream.errors.UnknownPluginError`
    for a provider no installed plugin registers.
    """
    if isinstance(model, str) and ":" not in model:  # an alias of the user's (hookstream aliases set NAME MODEL)
        from ._aliases import resolve_alias

        model = resolve_alias(model)
    if isinstance(model, Provider):
        if base_url is not None or api_key is not None or session is not None or options:
            raise ValueError("get_model() takes no base_url, api_key, session or options with a provider object")
        if isinstance(model, FallbackModel):
            model.resolve(get_model)
        return model
    if model == "test":  # the offline test model needs no model name (pydantic-ai's Agent("test"))
        model = "test:test"
    name, sep, model_name = model.partition(":")
    if not sep or not name or not model_name:
        raise ValueError(f"model must be 'PROVIDER:MODEL' (e.g. 'openai:gpt-4o-mini'), got {model!r}")
    provider_cls = get_registry().provider(name)
    if session is not None:
        options["session"] = session
    return provider_cls(model_name, base_url=base_url, api_key=api_key, **options)


def _run_plugins(run: RunSettings) -> Sequence[object]:
    """The run's plugins: its own, then the built-in ones its settings ask for (``callbacks`` but
    ``on_chunk``, ``prepare_step``)."""
    builtin: list[object] = []
    if CallbacksPlugin.wanted(run.callbacks):
        builtin.append(CallbacksPlugin(run.callbacks))
    if run.loop.prepare_step is not None:
        builtin.append(PrepareStep(run.loop.prepare_step))
    return [*run.plugins, *builtin] if builtin else run.plugins


def _summarizer(history: History | None) -> Callable[[list[Message]], str] | None:
    """What writes a summary for ``History.summarize(model)``: one call to that model, no tools."""
    if history is None or history.kind != "summary" or history.model is None:
        return None
    model = history.model

    def summarize(messages: list[Message]) -> str:
        result = chat(model, summary_request(messages), max_steps=1).result()
        if result.error is not None:
            raise result.error
        return result.text

    return summarize


def _stop_conditions(stop_when: Iterable[StopSpec] | None) -> list[StopCondition]:
    out: list[StopCondition] = []
    reg = get_registry()
    for item in stop_when or ():
        if isinstance(item, (str, tuple)):
            name, *args = (item,) if isinstance(item, str) else item
            out.append(reg.stop_condition(name)(*args))
        else:
            out.append(item)
    return out


def _executor(executor: ExecutorSpec) -> ToolExecutor:
    if isinstance(executor, str):
        return get_registry().tool_executor(executor)()
    if isinstance(executor, tuple):
        name, *args = executor
        return get_registry().tool_executor(name)(*args)
    return executor


class ChatStream:
    """The events of one run: iterate it (AG-UI events), or :meth:`iter_text` for text only; then read
    :meth:`result`."""

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

    def iter_text(self) -> Iterator[str]:
        """The run's text as it streams: each ``TEXT_MESSAGE_CONTENT`` delta (``str``), nothing else.
        Read :meth:`result` afterwards for tool calls, usage and the outcome.

        A run that ends in ``RUN_ERROR`` raises its error once the deltas so far are yielded: the typed
        :class:`~hookstream.errors.HookstreamError` (a connection refused, a missing API key, a
        provider's 4xx...) also kept in ``result().error``, so an error never reads as an empty answer
        (as simonw/llm's ``response.text()`` raises). A run that ends in an interrupt (a tool waiting for
        approval) or a cancel does not raise: read ``result().outcome``. Stopping early (``break``)
        aborts the run like :meth:`cancel` and raises nothing."""
        for ev in self:
            if type(ev) is TextMessageContent:
                yield ev.delta
        error = self._engine.result().error
        if error is not None:
            raise error

    def cancel(self) -> None:
        """Cancel from any thread; the stream ends with ``RUN_FINISHED`` outcome ``cancelled`` and
        :meth:`result` keeps every text and tool result produced so far."""
        self._engine.cancel()

    def add_message(self, content: str | Message, *, max_messages: int | None = None,
                    max_queued: int | None = MAX_QUEUED_MESSAGES) -> bool:
        """Steer the run while it goes: queue a user message (``content``: its text, or a
        :class:`~hookstream.Message` with role ``user``, files allowed) from any thread.

        The message is sent at the next step boundary: appended to the conversation after the tool
        results of the step that is running (or at once, before the first request, when the run has not
        called the model yet) and carried by the next model request. If the step that is running answers
        without tool calls, the run does not end there: it continues with one more step carrying the
        message (unless ``max_steps`` or a stop condition is reached). The stream says so with a
        ``CUSTOM`` ``message-added`` event (``{"messageId", "role": "user", "content"}``,
        :class:`~hookstream.events.MessageAddedPayload`) just before that step's ``STEP_STARTED``, and
        ``result().messages`` (and the thread's memory) hold the message in order. Messages queued
        together are sent together, in the order given. Same idea as pydantic-ai's ``AgentRun.enqueue``
        and openai-agents' ``RunState.add_input``; ``docs/agent-loop.md`` ("Steering a run").

        Returns ``True`` when the message was queued, ``False`` when the run has already ended (nothing
        is queued: start a new run with it). A queued message the run ends before sending (an error, a
        cancel, an interrupt, ``max_steps``) is kept in ``result().unsent_messages``.

        Limits (a bounded queue, so a caller cannot grow a run without end): at most ``max_queued``
        messages wait for the next step (default 64; ``None``: no limit), and
        with ``max_messages`` the conversation the message joins (the run's messages, those queued, this
        one and room for the running step's reply: an assistant message and its tool results, 2) holds at
        most that many, so the next model request carries no more. Past either,
        :class:`~hookstream.errors.SteeringLimitError` (``limit`` names it) and nothing is queued; the run
        goes on. ``hookstream serve`` answers ``429`` / ``413`` then (docs/agui-server.md, "Limits").

        Raises :class:`ValueError` for a :class:`~hookstream.Message` whose role is not ``user``."""
        if isinstance(content, str):
            message = Message.user(content)
        elif isinstance(content, Message):
            if content.role != "user":
                raise ValueError(f"add_message() takes a user message, not a {content.role} message")
            message = content
        else:
            raise TypeError(f"add_message() takes a str or a Message, not {type(content).__name__}")
        return self._engine.add_message(message, max_messages=max_messages, max_queued=max_queued)

    def result(self) -> RunResult:
        """The run's result; consumes the rest of the stream first when it was not iterated.

        When iteration started and stopped early (``break``), the run is aborted like :meth:`cancel`:
        text, steps and tool calls so far are kept, memory is saved and the callbacks fire once."""
        with self._lock:
            it = self._iter
        if it is None:
            for _ in self:
                pass
        elif not self._done.is_set():
            # Iteration started elsewhere and stopped early: closing aborts the run (see Engine.events).
            it.close()  # type: ignore[attr-defined]  # a generator; typed as Iterator to keep it read-only
        return self._engine.result()

    def to_sse(self) -> Iterator[bytes]:
        """The run as AG-UI over SSE: each event as ``data: {json}\\n\\n`` bytes (camelCase JSON,
        ``RUN_STARTED`` with ``protocolVersion``, usage on ``RUN_FINISHED``), for a streaming HTTP body."""
        return to_sse(self)

    def to_json_lines(self) -> Iterator[str]:
        """Each event as one line of AG-UI JSON."""
        for ev in self:
            yield to_json(ev)

    @property
    def partial_output(self) -> Any:
        """With ``chat(..., output=SPEC)``: the answer's JSON value as far as it has streamed, current
        after every event (plain JSON: dicts, lists, scalars; a string still being written is not in it
        yet), ``None`` before the answer starts. The same containers are filled in place, so read it, do
        not keep it; the typed value is ``result().output``. Read it on the iterating thread."""
        return self._engine.partial_output

    @property
    def engine(self) -> Engine:
        return self._engine


def chat(
    model: str | Provider,
    messages_or_prompt: str | Message | Iterable[Message | dict[str, Any]] | None = None,
    *,
    settings: RunSettings | None = None,
    resume: Resume | dict[str, Any] | list[dict[str, Any]] | None = None,
    thread_id: str | None = None,
    **fields: Any,
) -> ChatStream:
    """Start a chat run and return its :class:`ChatStream` (nothing is sent until it is iterated).

    ``model`` is ``"PROVIDER:MODEL"`` (the provider's own endpoint, key from its environment variable),
    a provider object from :func:`get_model` (base URL, API key and connection pool set once), or a
    :class:`~hookstream.FallbackModel` (each step goes to the next of its models when one fails with 429,
    5xx, an overload, a connect error or a first-event timeout before any content; docs/fallback.md). With
    no API key, a run against the provider's own endpoint ends at once with ``RUN_ERROR``
    ``missing_api_key`` naming the environment variable (a custom ``base_url`` is called without one).
    ``messages_or_prompt`` is a prompt string, a :class:`~hookstream.Message`, or a list of messages /
    ``{"role", "content"}`` dicts.

    How the run goes is a :class:`~hookstream.RunSettings`: pass one as ``settings`` (shared by any
    number of runs, an :class:`~hookstream.Agent`, ``batch()`` and ``make_app``), and/or its fields as
    keywords, which replace the settings' own: ``tools``, ``system``, ``max_steps``, ``tool_choice``,
    ``max_tokens``, ``temperature``, ``options``, ``executor`` (``thread``, ``sequential``, ``bounded``,
    ``process``; ``ray`` with hookstream-ray; docs/executors.md), ``stop_when`` (callables or
    ``("name", *args)``: ``step_count_is``, ``has_tool_call``, ``finish_reason_is``,
    ``total_tokens_exceed``), ``approve(call) -> bool``, ``timeouts``, ``callbacks``, ``loop``,
    ``observers``, ``plugins`` (run plugins chosen for this run: ``["cache"]``, docs/writing-a-run-plugin.md),
    ``output``, ``context``, ``memory`` and ``history``; see :class:`~hookstream.RunSettings` and
    ``docs/agent-loop.md``.

    ``approve(call) -> bool`` decides tools that need approval (without it the run ends with an
    ``interrupt`` outcome and ``chat(model, resume=result.resume({...}))`` continues it; client tools
    resume the same way with ``tool_outputs``; ``resume`` is a :class:`~hookstream.Resume`, a dict of its
    fields, or AG-UI ``RunAgentInput.resume`` entries). ``memory`` loads/saves the conversation under
    ``thread_id``; with ``memory``, ``messages_or_prompt`` may be ``None``: the run continues the stored
    thread (an interrupted run's pending calls are stored with it, so ``resume=`` needs nothing else).

    ``output`` asks for structured output: a JSON Schema dict, a dataclass, a ``TypedDict``, an attrs
    class or a pydantic model (or :class:`~hookstream.Output` wrapping one). While the answer streams, the
    partial object is sent as AG-UI ``STATE_DELTA`` events (JSON Patch under ``/output``); at the end the
    value is validated and kept in ``result().output`` (``RUN_ERROR`` ``output_invalid`` otherwise, unless
    ``loop={"output_retries": N}``). See ``docs/structured-output.md``.

    Raises :class:`TypeError` for an unknown keyword or a field of the wrong type, :class:`ValueError` for
    a malformed ``model``, ``max_steps`` below 1, no messages or an output name that is also a tool's
    name, and :class:`~hookstream.errors.UnknownPluginError` for an unknown provider, executor, stop condition or
    run plugin. Errors during the run do not raise: they end the stream with ``RUN_ERROR`` and are kept
    in ``result().error``.
    """
    run = RunSettings.of(settings, **fields)
    own_provider = isinstance(model, str)
    provider = get_model(model)  # a FallbackModel's "PROVIDER:MODEL" entries are built here, once
    resumed = Resume.coerce(resume) if resume is not None else None
    msgs = _messages(messages_or_prompt, run, resumed)
    plan = run_plan(provider, run, resumed, thread_id)
    return ChatStream(Engine(provider, msgs, run, plan, close_provider=own_provider))


def _messages(
    messages_or_prompt: str | Message | Iterable[Message | dict[str, Any]] | None, run: RunSettings,
    resume: Resume | None,
) -> list[Message]:
    if messages_or_prompt is None:
        if run.memory is None and (resume is None or resume.messages is None):
            raise ValueError("chat() needs messages_or_prompt (or resume= with the interrupted run's messages, "
                             "or memory= with a thread_id to continue)")
        msgs: list[Message] = []
    else:
        msgs = coerce_messages(messages_or_prompt)
    if run.system is not None and not any(m.role == "system" for m in msgs[:1]):
        msgs.insert(0, Message.system(run.system))
    return msgs


def run_plan(
    provider: Provider, run: RunSettings, resume: Resume | None = None, thread_id: str | None = None,
) -> RunPlan:
    """What the engine needs of one run besides its settings: names resolved through the registry
    (executor, stop conditions, run plugins), the structured output resolved, the run's hooks built, the
    AG-UI ids. Raises like :func:`chat`."""
    loop = run.loop
    limits = run.timeouts
    tool_set = {t.name: t for t in run.tools}
    resolved = resolve_output(run.output) if run.output is not None else None
    if resolved is not None and resolved.format.name in tool_set:
        raise ValueError(f"the output is named {resolved.format.name!r} like a tool; give Output(spec, name=...)")
    return RunPlan(
        model=provider.model,
        thread_id=thread_id or new_id("thread"),
        run_id=loop.run_id or new_id("run"),
        tools=tool_set,
        executor=_executor(run.executor),
        stop_when=_stop_conditions(run.stop_when),
        call_options=CallOptions(connect_timeout=limits.connect, read_timeout=limits.read,
                                 max_retries=loop.max_retries, max_event_bytes=loop.max_event_bytes),
        resume=resume,
        resolve_model=get_model,
        hooks=get_registry().run_hooks(_run_plugins(run), run.observers),
        output=resolved,
        summarizer=_summarizer(run.history),
    )
