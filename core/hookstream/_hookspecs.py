"""Hook specifications: the seven kinds of hookstream plugin.

A plugin is a module (or object) with functions named after these hooks, decorated with
``hookstream.plugin.hookimpl``, and listed under the ``hookstream`` entry-point group of its distribution::

    [project.entry-points.hookstream]
    myplugin = "my_package.plugin"

Every hook receives a ``register`` callable and calls it once per thing it provides, in the style of
``llm``'s ``register_models``. Names must be unique across plugins; a later registration of a taken
name is reported by ``hookstream plugins`` and ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from ._agentloop.executors import ToolExecutor
    from ._agentloop.observe import Observer
    from ._agentloop.stop import StopCondition
    from ._prices import ModelCapabilities
    from ._processing.strategies import ChunkStrategy
    from ._server.auth import Authenticator
    from ._stream.provider import Provider

__all__ = [
    "AuthenticatorRegistrar",
    "ChunkStrategyRegistrar",
    "ModelRegistrar",
    "ObserverRegistrar",
    "ProviderRegistrar",
    "StopConditionRegistrar",
    "ToolExecutorRegistrar",
    "hookimpl",
    "hookspec",
]

ProviderRegistrar = Callable[[str, "type[Provider]"], None]
"""``register(name, provider_class)``, given to :func:`hookstream_register_providers`."""
ChunkStrategyRegistrar = Callable[[str, "Callable[..., ChunkStrategy]"], None]
"""``register(name, factory)``, given to :func:`hookstream_register_chunk_strategies`."""
ToolExecutorRegistrar = Callable[[str, "Callable[..., ToolExecutor]"], None]
"""``register(name, factory)``, given to :func:`hookstream_register_tool_executors`."""
StopConditionRegistrar = Callable[[str, "Callable[..., StopCondition]"], None]
"""``register(name, factory)``, given to :func:`hookstream_register_stop_conditions`."""
ObserverRegistrar = Callable[[str, "Callable[[], Observer | None]"], None]
"""``register(name, factory)``, given to :func:`hookstream_register_observers`."""
AuthenticatorRegistrar = Callable[[str, "Callable[[], Authenticator]"], None]
"""``register(name, factory)``, given to :func:`hookstream_register_authenticators`."""
ModelRegistrar = Callable[[str, "ModelCapabilities"], None]
"""``register("PROVIDER:MODEL", capabilities)``, given to :func:`hookstream_register_models`."""

hookspec = pluggy.HookspecMarker("hookstream")
hookimpl = pluggy.HookimplMarker("hookstream")


@hookspec
def hookstream_register_providers(register: ProviderRegistrar) -> None:
    """Register provider adapters.

    Called once, when the plugin registry is first used (``hookstream.chat`` or any CLI command).

    :param register: ``register(name, provider_class)``. ``name`` is what users put before the colon
        in ``--model NAME:MODEL`` (``"openai"``). ``provider_class`` is a subclass of
        :class:`hookstream.plugin.Provider`; it is instantiated per chat as
        ``provider_class(model, base_url=..., api_key=...)``.
    :returns: nothing; registrations go through ``register``.
    """


@hookspec
def hookstream_register_chunk_strategies(register: ChunkStrategyRegistrar) -> None:
    """Register chunk strategies, which decide when the stream processor publishes text.

    Called once, when the registry is first used.

    :param register: ``register(name, factory)``. ``factory(**options)`` returns an object with
        ``should_emit(chunk: str, accumulated: str) -> bool`` and ``reset() -> None`` (see
        :class:`hookstream.plugin.ChunkStrategy`). Users pick it with ``strategy="NAME"`` or
        ``--strategy NAME``.
    :returns: nothing.
    """


@hookspec
def hookstream_register_tool_executors(register: ToolExecutorRegistrar) -> None:
    """Register tool executors, which run the tool calls of one step.

    Called once, when the registry is first used.

    :param register: ``register(name, factory)``. ``factory(*args)`` returns an object with
        ``run(requests: Sequence[ToolCallRequest], cancel: CancellationToken) -> list[ToolResultPart]``
        (see :class:`hookstream.plugin.ToolExecutor`). Each :class:`hookstream.plugin.ToolCallRequest` is
        plain data that pickles: the tool's ``ref`` (``"module:qualname"``, importable by a worker; the
        :class:`~hookstream.plugin.Tool` itself rides along only in-process), the call (id, name,
        arguments), ``timeout`` seconds from ``started_at`` (Unix time), the history and the tool's
        ``resources``. The executor returns one result per request, in request order; a tool failure,
        a passed time limit or a set ``cancel`` token is an error result (``Error: ...``), and the running
        call is stopped wherever it runs. :func:`hookstream.plugin.run_calls` waits for each call on its
        own thread with the run's context and reports it to the observers;
        :func:`hookstream.plugin.run_request` runs a request inside a worker. Users pick the executor with
        ``executor="NAME"`` or ``executor=("NAME", *args)``.
    :returns: nothing.
    """


@hookspec
def hookstream_register_stop_conditions(register: StopConditionRegistrar) -> None:
    """Register stop conditions, which tell the agent loop to stop calling the model.

    Called once, when the registry is first used.

    :param register: ``register(name, factory)``. ``factory(*args)`` returns a callable
        ``(steps: list[StepResult]) -> bool``; ``True`` stops the loop after the current step. Users
        pick it with ``stop_when=[("NAME", arg...)]`` or pass the callable itself.
    :returns: nothing.
    """


@hookspec
def hookstream_register_observers(register: ObserverRegistrar) -> None:
    """Register run observers: tracing, metrics, timing (see :class:`hookstream.plugin.Observer`).

    Called once, when the registry is first used. Every registered factory is then called with no
    arguments at the start of each :func:`hookstream.chat` run; it returns the run's observer, or
    ``None`` to stay out of that run (disabled, not configured). A factory that raises is logged and
    skipped for that run; the run goes on.

    :param register: ``register(name, factory)``. The observer is any object with some of the
        methods of :class:`hookstream.plugin.Observer`: ``run_start(run)``, ``run_end(run, result)``,
        ``model_call_start(call)``, ``model_call_first_chunk(call)``, ``model_call_chunk(call, event)``,
        ``model_call_retry(call, retry)``, ``model_call_end(call)``, ``model_call_error(call, error)``,
        ``tool_start(tool)``, ``tool_end(tool, result)``. Model-call methods run on the thread that
        iterates the run, tool methods on the executor thread that runs the tool, all in the run's
        :mod:`contextvars` context. A method that raises is logged once and the observer is not
        called again in that run. Users see the names with ``hookstream plugins`` and block one with
        ``HOOKSTREAM_BLOCK_PLUGINS``.
    :returns: nothing.
    """


@hookspec
def hookstream_register_authenticators(register: AuthenticatorRegistrar) -> None:
    """Register authenticators for the AG-UI server (``hookstream serve --auth NAME``, ``make_app(...,
    authenticate=...)``): who is asking, from the HTTP request.

    Called once, when the registry is first used.

    :param register: ``register(name, factory)``. ``factory()`` (called once, when the server starts;
        it reads its own settings, e.g. from the environment) returns ``authenticate(request) ->
        Principal | None``: ``request`` is the WSGI environ (PEP 3333) of one ``POST``; the result is
        the caller as a :class:`hookstream.plugin.Principal`, or ``None`` for a request that names
        nobody (the server answers ``401``). It is called from every request thread at once, so it
        must be thread-safe; an exception counts as ``None``, logged.
    :returns: nothing.
    """


@hookspec
def hookstream_register_models(register: ModelRegistrar) -> None:
    """Register models a provider serves and what they can do, for the model catalogue
    (:func:`hookstream.models`, ``hookstream models [PROVIDER]``).

    Called once, when the registry is first used. Nothing here is needed to use a model: any model
    name the provider accepts works in ``"PROVIDER:MODEL"``; the catalogue only lists what is known.

    :param register: ``register("PROVIDER:MODEL", capabilities)``: the model as users write it
        (``"openai:gpt-4o-mini"``) and a :class:`hookstream.plugin.ModelCapabilities` (``vision``,
        ``tools``, ``reasoning``, ``context_window``, ``description``; ``None`` where not known).
        Prices are never registered here: the catalogue and run costs take them from genai-prices
        (``hookstream[prices]``), matched by provider and model name.
    :returns: nothing.
    """
