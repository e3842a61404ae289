"""Hook specifications: every way a plugin extends hookstream, called through pluggy.

A plugin is a module (or object) with functions named after these hooks, listed under the ``hookstream``
entry-point group of its distribution::

    [project.entry-points.hookstream]
    myplugin = "my_package.plugin"

Mark each function with ``hookstream.plugin.hookimpl`` (``@hookimpl``, ``@hookimpl(wrapper=True)``,
``@hookimpl(tryfirst=True)``...). A function whose name starts with ``hookstream_`` but matches no spec
here, or that takes an argument the spec does not name, is refused: the plugin is not loaded and
``hookstream plugins`` lists it under failures (as pytest does with ``pytest_*`` names).

Three families, as in pytest (hooks, hook wrappers, ``pytest_addoption``) and simonw/llm
(``register_commands``):

* **Registration** (``hookstream_register_*``): name a thing (a provider, a chunk strategy...) with a
  ``register(name, thing)`` callable. These are *historic* hooks: pluggy calls each plugin's
  implementation once, as the plugin is registered, so every name is credited to the plugin that
  registered it. ``thing`` may be the object itself or a ``"module:attribute"`` string, imported on first
  use, so a plugin costs nothing at start-up (see :func:`hookstream_register_providers`).
* **Run hooks** (``hookstream_run_start``, ``hookstream_step_start``, ``hookstream_model_call``,
  ``hookstream_model_call_retry``, ``hookstream_tool_call``, ``hookstream_step_end``,
  ``hookstream_run_end``): shape a run. The model-call and tool-call hooks are ``firstresult`` hooks with a
  built-in innermost implementation (the HTTP call, the tool), so a plugin may wrap them
  (``@hookimpl(wrapper=True)``: change what goes in, see and change what comes out) or answer instead of
  them (a plain ``@hookimpl(tryfirst=True)`` returning a value). A run plugin is on for every run once
  installed (its module implements run hooks), or chosen per run by name
  (:func:`hookstream_register_run_plugins`; ``chat(..., plugins=["NAME"])``, ``--plugin NAME`` on the CLI,
  ``make_app(..., settings=RunSettings(plugins=...))``).
  A run's plugins, installed and chosen per run, sit in one pluggy manager and are ordered as pytest
  orders hooks: every wrapper outermost, then the ``tryfirst`` implementations, the plain ones, the
  ``trylast`` ones (the built-in last); within one of those, the plugin registered last first (a run's
  own plugins after the installed ones). So a wrapper sees every call, whichever plugin answers it.
* **CLI hooks** (``hookstream_register_commands``, ``hookstream_cli_options``, ``hookstream_cli_configure``):
  add commands and options to the ``hookstream`` command line.

Threads: registration and CLI hooks run on the thread that first uses the registry or runs the command.
Run hooks run on the thread that iterates the run, except :func:`hookstream_tool_call`, which runs on the
thread that waits for that tool call (several at once for parallel calls). Every run hook runs inside the
run's own :mod:`contextvars` context, so what a plugin sets there (an OpenTelemetry current span) stays
set for the run and reaches the tool functions. A run hook that raises ends the run with ``RUN_ERROR``
``plugin_error`` naming the plugin (a tool-call hook that raises: an error result for that call).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import pluggy

from ._markers import RUN_HOOKS, hookimpl, hookspec

if TYPE_CHECKING:
    import click

    from ._agentloop.executors import ToolExecutor
    from ._agentloop.hooks import ModelCallContext, RunContext, StepContext, ToolCallContext
    from ._agentloop.observe import Observer, RetryInfo
    from ._agentloop.stop import StopCondition
    from ._agentloop.values import RunResult
    from ._capabilities import ModelCapabilities
    from ._events import BaseEvent
    from ._messages import ToolResultPart
    from ._principal import Authenticator
    from ._processing.strategies import ChunkStrategy
    from ._settings import CLIRun
    from ._stream.accumulate import StepResult
    from ._stream.provider import Provider

__all__ = [
    "RUN_HOOKS",
    "AuthenticatorRegistrar",
    "ChunkStrategyRegistrar",
    "ModelRegistrar",
    "ObserverRegistrar",
    "ProviderRegistrar",
    "RunPluginRegistrar",
    "StopConditionRegistrar",
    "ToolExecutorRegistrar",
    "hookimpl",
    "hookspec",
]

ProviderRegistrar = Callable[[str, "type[Provider] | str"], None]
"""``register(name, provider_class_or_ref)``, given to :func:`hookstream_register_providers`."""
ChunkStrategyRegistrar = Callable[[str, "Callable[..., ChunkStrategy] | str"], None]
"""``register(name, factory_or_ref)``, given to :func:`hookstream_register_chunk_strategies`."""
ToolExecutorRegistrar = Callable[[str, "Callable[..., ToolExecutor] | str"], None]
"""``register(name, factory_or_ref)``, given to :func:`hookstream_register_tool_executors`."""
StopConditionRegistrar = Callable[[str, "Callable[..., StopCondition] | str"], None]
"""``register(name, factory_or_ref)``, given to :func:`hookstream_register_stop_conditions`."""
ObserverRegistrar = Callable[[str, "Callable[[], Observer | None] | str"], None]
"""``register(name, factory_or_ref)``, given to :func:`hookstream_register_observers`."""
AuthenticatorRegistrar = Callable[[str, "Callable[[], Authenticator] | str"], None]
"""``register(name, factory_or_ref)``, given to :func:`hookstream_register_authenticators`."""
ModelRegistrar = Callable[[str, "ModelCapabilities"], None]
"""``register("PROVIDER:MODEL", capabilities)``, given to :func:`hookstream_register_models`."""
RunPluginRegistrar = Callable[[str, "Callable[..., object] | str"], None]
"""``register(name, factory_or_ref)``, given to :func:`hookstream_register_run_plugins`."""



# -- declaring hooks ------------------------------------------------------------------------------------


@hookspec(historic=True)
def hookstream_addhooks(pluginmanager: pluggy.PluginManager) -> None:
    """Declare hook specs of the plugin's own (as pytest's ``pytest_addhooks``), so other plugins extend it.

    Called once per plugin, as the plugin is registered (a historic hook). A plugin calls
    ``pluginmanager.add_hookspecs(module_or_class)`` with its ``@hookspec`` functions
    (``hookstream.plugin.hookspec``; names start with ``hookstream_``); other plugins then implement them,
    whichever loads first: a ``hookstream_*`` function that matches no spec is refused only once every
    installed plugin has loaded (pytest's ``check_pending``). The declared specs are on every run's manager
    too, so a run plugin may implement them; call them through ``hookstream.get_registry().pm.hook``, or
    inside a run through ``hookstream.plugin.current_hooks().hook`` (every plugin of that run).

    :param pluginmanager: the registry's :class:`pluggy.PluginManager`.
    :returns: nothing.
    """


# -- registration ---------------------------------------------------------------------------------------


@hookspec(historic=True)
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    """Register provider adapters.

    Called once per plugin, as the plugin is registered (a historic hook).

    :param register: ``register(name, provider_class)``. ``name`` is what users put before the colon
        in ``--model NAME:MODEL`` (``"openai"``). ``provider_class`` is a subclass of
        :class:`hookstream.plugin.Provider`, or a ``"module:Class"`` string naming it, imported the first
        time the provider is used (so ``hookstream --version`` does not import the adapter). It is
        instantiated per chat as ``provider_class(model, base_url=..., api_key=...)``.
    :returns: nothing; registrations go through ``register``.
    """


@hookspec(historic=True)
def hookstream_register_chunk_strategies(register: ChunkStrategyRegistrar) -> None:
    """Register chunk strategies, which decide when the stream processor publishes text.

    Called once per plugin, as it is registered.

    :param register: ``register(name, factory)``. ``factory(**options)`` (or a ``"module:attribute"``
        string naming it) returns an object with ``should_emit(chunk: str, accumulated: str) -> bool`` and
        ``reset() -> None`` (see :class:`hookstream.ChunkStrategy`). Users pick it with
        ``strategy="NAME"`` or ``--strategy NAME``.
    :returns: nothing.
    """


@hookspec(historic=True)
def hookstream_register_tool_executors(register: ToolExecutorRegistrar) -> None:
    """Register tool executors, which run the tool calls of one step.

    Called once per plugin, as it is registered.

    :param register: ``register(name, factory)``. ``factory(*args)`` (or a ``"module:attribute"`` string)
        returns an object with
        ``run(requests: Sequence[ToolCallRequest], cancel: CancellationToken) -> list[ToolResultPart]``
        (see :class:`hookstream.plugin.ToolExecutor`). Each :class:`hookstream.plugin.ToolCallRequest` is
        plain data that pickles: the tool's ``ref`` (``"module:qualname"``, importable by a worker; the
        :class:`~hookstream.Tool` itself rides along only in-process), the call (id, name,
        arguments), ``timeout`` seconds from ``started_at`` (Unix time), the history and the tool's
        ``resources``. The executor returns one result per request, in request order; a tool failure,
        a passed time limit or a set ``cancel`` token is an error result (``Error: ...``), and the running
        call is stopped wherever it runs. :func:`hookstream.plugin.run_calls` waits for each call on its
        own thread with the run's context and calls :func:`hookstream_tool_call` there;
        :func:`hookstream.plugin.run_request` runs a request inside a worker. Users pick the executor with
        ``executor="NAME"`` or ``executor=("NAME", *args)``.
    :returns: nothing.
    """


@hookspec(historic=True)
def hookstream_register_stop_conditions(register: StopConditionRegistrar) -> None:
    """Register stop conditions, which tell the agent loop to stop calling the model.

    Called once per plugin, as it is registered.

    :param register: ``register(name, factory)``. ``factory(*args)`` returns a callable
        ``(steps: list[StepResult]) -> bool``; ``True`` stops the loop after the current step. Users
        pick it with ``stop_when=[("NAME", arg...)]`` or pass the callable itself.
    :returns: nothing.
    """


@hookspec(historic=True)
def hookstream_register_observers(register: ObserverRegistrar) -> None:
    """Register run observers by name (an older, narrower form of the run hooks below).

    Called once per plugin, as it is registered. Every registered factory is called with no arguments at
    the start of each run; it returns the run's observer (an object with some of the methods of
    :class:`hookstream.Observer`), or ``None`` to stay out of that run. The observer is driven by
    the run hooks: ``run_start``/``run_end`` by :func:`hookstream_run_start`/:func:`hookstream_run_end`,
    the ``model_call_*`` methods by a wrapper of :func:`hookstream_model_call`, ``tool_start``/``tool_end``
    by a wrapper of :func:`hookstream_tool_call`. A method that raises is logged once and that observer is
    not called again in the run. New plugins should implement the run hooks directly.

    :param register: ``register(name, factory)``.
    :returns: nothing.
    """


@hookspec(historic=True)
def hookstream_register_authenticators(register: AuthenticatorRegistrar) -> None:
    """Register authenticators for the AG-UI server (``hookstream serve --auth NAME``, ``make_app(...,
    authenticate=...)``): who is asking, from the HTTP request.

    Called once per plugin, as it is registered.

    :param register: ``register(name, factory)``. ``factory()`` (called once, when the server starts;
        it reads its own settings, e.g. from the environment) returns ``authenticate(request) ->
        Principal | None``: ``request`` is the WSGI environ (PEP 3333) of one ``POST``; the result is
        the caller as a :class:`hookstream.server.Principal`, or ``None`` for a request that names
        nobody (the server answers ``401``). It is called from every request thread at once, so it
        must be thread-safe; an exception counts as ``None``, logged.
    :returns: nothing.
    """


@hookspec(historic=True)
def hookstream_register_models(register: ModelRegistrar) -> None:
    """Register models a provider serves and what they can do, for the model catalogue
    (:func:`hookstream.models`, ``hookstream models [PROVIDER]``).

    Called once per plugin, as it is registered. Nothing here is needed to use a model: any model
    name the provider accepts works in ``"PROVIDER:MODEL"``; the catalogue only lists what is known.

    :param register: ``register("PROVIDER:MODEL", capabilities)``: the model as users write it
        (``"openai:gpt-4o-mini"``) and a :class:`hookstream.plugin.ModelCapabilities` (``vision``,
        ``tools``, ``reasoning``, ``context_window``, ``description``; ``None`` where not known).
        Prices are never registered here: the catalogue and run costs take them from genai-prices
        (``hookstream[prices]``), matched by provider and model name.
    :returns: nothing.
    """


@hookspec(historic=True)
def hookstream_register_run_plugins(register: RunPluginRegistrar) -> None:
    """Register run plugins that are off until a run asks for them by name.

    Called once per plugin, as it is registered. A module that implements run hooks itself is on for
    every run; a plugin that should be chosen per run (a response cache, guardrails) registers a factory
    here instead and keeps its hook implementations on the object the factory returns.

    :param register: ``register(name, factory)``. ``factory(**options)`` (or a ``"module:attribute"``
        string naming it) returns an object with run-hook implementations (``@hookimpl`` methods). A run
        chooses it with ``chat(..., plugins=["NAME"])`` (``factory()``), ``plugins=[("NAME", {options})]``
        or ``plugins=[obj]`` (an object built by the user), on the CLI with ``--plugin NAME`` or an option
        the plugin adds (:func:`hookstream_cli_configure`), and in ``serve`` through its run settings.
    :returns: nothing.
    """


# -- run hooks ------------------------------------------------------------------------------------------


@hookspec
def hookstream_run_start(run: RunContext) -> None:
    """A run starts, before its first event (``RUN_STARTED``) is yielded.

    Runs on the thread that iterates the run, in the run's own context. ``run.messages`` is the
    conversation the run starts from (history, then the new messages); a plugin may change the list in
    place. ``run.state`` is a dict for plugins to keep per-run values in (key it by your plugin's name).

    :param run: the :class:`hookstream.plugin.RunContext` (``thread_id``, ``run_id``, ``provider``,
        ``model``, ``messages``, ``settings``, ``state``, ``started_at`` in ``time.monotonic()`` seconds).
    :returns: nothing. Raising ends the run with ``RUN_ERROR`` ``plugin_error``.
    """


@hookspec
def hookstream_step_start(step: StepContext) -> None:
    """Between steps: before each model call's request is built.

    ``LoopSettings.prepare_step`` is a built-in implementation (``tryfirst``, registered after the run's
    plugins, so it runs first): the others see the step as it left it.

    A plugin changes the step by assigning to its fields: ``step.messages`` (the history this call sends;
    the run's own history is not changed), ``step.tools`` (``{name: Tool}``), ``step.tool_choice`` and
    ``step.model`` (``"PROVIDER:MODEL"``, a model name of the same provider, or a provider object).
    ``step.emit(event)`` sends an AG-UI event (a ``Custom`` naming what the plugin did, such as
    ``hookstream.compaction``) to the run's consumer right after the step's ``STEP_STARTED``.

    :param step: the :class:`hookstream.plugin.StepContext` (``number`` from 1, ``steps`` so far as
        :class:`~hookstream.StepResult`, ``run``).
    :returns: nothing.
    """


@hookspec(firstresult=True)
def hookstream_model_call(call: ModelCallContext) -> Iterable[BaseEvent] | None:
    """One model call: returns its AG-UI events in the adapter grammar (``RUN_STARTED``, content,
    ``RUN_FINISHED`` or ``RUN_ERROR``), lazily: nothing is sent until the engine iterates them.

    The built-in implementation (``trylast``) sends ``call.request`` to ``call.provider`` over HTTP, with
    retries. A plugin can:

    * **change the request**: a wrapper (``@hookimpl(wrapper=True)``) assigns ``call.request =
      attrs.evolve(call.request, ...)`` before its ``yield``;
    * **see and change every event, or end the step**: a wrapper takes the events from ``events =
      yield`` and returns its own iterator over them; yielding ``RunError(message, code=...)`` (and
      stopping) ends the step with that error, after the content already yielded, which is kept;
      ``call.abort()`` stops the HTTP read from any thread;
    * **answer without a network call**: a plain ``@hookimpl(tryfirst=True)`` returns events itself (for
      instance ``call.parse_body(body)``, a stored provider body run through the same adapter); the
      built-in is then not called, wrappers still are.

Every wrapper, of an installed plugin or of the run's own, sees the call and the events of whichever
implementation answered (a cache hit, the HTTP call); a wrapper inside it (registered later) sees them
after the outer one's changes to the request.

    Runs on the thread that iterates the run (a wrapper's code before ``yield`` runs before the
    request is sent; its iterator runs as the engine reads events). Raising ends the step with
    ``RUN_ERROR`` ``plugin_error``.

    :param call: the :class:`hookstream.plugin.ModelCallContext` (``run``, ``step`` number, ``provider``,
        ``request``, ``http_request()``, ``parse_body(bytes)``, ``on_body`` taps for the raw response
        bytes, ``abort()``, ``state``).
    :returns: an iterable of AG-UI events, or ``None`` to leave the call to the next implementation.
    """


@hookspec
def hookstream_model_call_retry(call: ModelCallContext, retry: RetryInfo) -> None:
    """A model call failed before its first byte and waits ``retry.delay`` seconds before attempt
    ``retry.attempt + 1`` (``retry.error`` is the typed failure). For observers; runs on the run's thread.

    :returns: nothing.
    """


@hookspec(firstresult=True)
def hookstream_tool_call(call: ToolCallContext) -> ToolResultPart | None:
    """One tool call the engine runs: returns its :class:`~hookstream.ToolResultPart`.

    The built-in implementation (``trylast``) runs the tool (on the run's executor, with its time limit
    and cancellation). A plugin can:

    * **change the arguments**: a wrapper assigns ``call.arguments = {...}`` before its ``yield``;
    * **replace the result**: a wrapper returns another part after ``result = yield``;
    * **refuse the call**: a plain ``@hookimpl(tryfirst=True)`` returns ``call.refuse("why")`` (an error
      result; the tool does not run);
    * **see what the tool streams** while it runs (``ToolContext.emit``): append a callable to
      ``call.on_stream`` before the tool runs; one that answers in the tool's place streams with
      ``call.emit(event)`` (a journal replaying the call).

    Every wrapper, installed or the run's own, sees the call and gets the result of whichever
    implementation answered: a refusal is a result like any other (``result.is_error``).

    Runs on the thread that waits for this call (an executor thread; several calls of one step run their
    hooks at once, so an implementation must be thread-safe), in a copy of the run's context. The tool
    itself may run elsewhere (a process, a Ray task). Raising gives the call an error result naming the
    plugin; the run goes on.

    :param call: the :class:`hookstream.plugin.ToolCallContext` (``run``, ``call_id``, ``name``,
        ``arguments``, ``tool``).
    :returns: the result part, or ``None`` to leave the call to the next implementation.
    """


@hookspec
def hookstream_step_end(run: RunContext, result: StepResult) -> None:
    """A step ended, after its tools ran (also a failed, aborted or retried step): once per step.

    Runs on the thread that iterates the run, in the run's context. ``Callbacks.on_step_finish`` is a
    built-in implementation.

    :param run: the :class:`hookstream.plugin.RunContext`.
    :param result: the step's :class:`~hookstream.StepResult` (``number``, ``text``, ``tool_calls``,
        ``tool_results``, ``finish_reason``, ``usage``; ``error`` set when it failed).
    :returns: nothing. An exception is logged; the run goes on.
    """


@hookspec
def hookstream_run_end(run: RunContext, result: RunResult) -> None:
    """A run ended (success, interrupt, cancelled or error), after its last event was produced.

    Runs on the thread that iterates the run, in the run's context, once per run, also when the
    consumer stopped reading early.

    :param result: the :class:`~hookstream.RunResult` (``outcome``, ``usage``, ``steps``, ``messages``,
        ``error``).
    :returns: nothing. An exception is logged; the run's result stands.
    """


# -- the command line -----------------------------------------------------------------------------------


@hookspec
def hookstream_register_commands(cli: click.Group) -> None:
    """Add commands to the ``hookstream`` command line (as simonw/llm's ``register_commands``).

    Called when the command line starts, on its thread. ``cli`` is the top-level click group: add with
    ``@cli.command()`` or ``cli.add_command(...)``. Keep imports inside the command function so the
    plugin costs nothing for other commands.

    :returns: nothing.
    """


@hookspec
def hookstream_cli_options(command: str) -> list[click.Option] | None:
    """Options a plugin adds to a run command (as pytest's ``pytest_addoption``).

    Called when ``command`` (``"chat"``, ``"batch"`` or ``"serve"``) builds its options. The values reach
    :func:`hookstream_cli_configure` by the options' names.

    :param command: the command's name.
    :returns: a list of :class:`click.Option`, or ``None``.
    """


@hookspec
def hookstream_cli_configure(command: str, options: dict[str, Any], run: CLIRun) -> None:
    """Turn the options a plugin added into the run: called once per command after its options are
    parsed and before anything runs.

    A plugin changes ``run`` in place: ``run.settings = attrs.evolve(run.settings, ...)`` (for instance
    adding a run plugin to ``plugins`` or tools to ``tools``), ``run.stack.enter_context(...)`` for a
    resource that must live as long as the command (an MCP server's process), ``run.runner`` for
    ``batch`` (a runner factory, ``BatchJob -> Runner``, that runs the chats elsewhere, such as Ray
    workers: ``hookstream_ray.RayRunner``), ``run.main`` to take the command over (a callable run in
    place of its body: hookstream-provider-batch's ``batch --provider-batch``).
    Raise :class:`click.UsageError` for a wrong combination of options.

    :param options: every option value of the command, by parameter name (``{"cache": True, ...}``).
    :param run: the :class:`hookstream.plugin.CLIRun`.
    :returns: nothing.
    """
