"""One frozen value for how a run goes: :class:`RunSettings`, shared by ``chat()``, ``batch()``, the Ray
batch, :class:`~hookstream.Agent`, ``make_app``/``serve`` and the CLI instead of each copying the same
keyword list; and :class:`CLIRun`, what a CLI command hands the plugins' :func:`hookstream_cli_configure`.

``RunSettings(**fields)`` checks every field at construction (a wrong type or an unknown name raises
there, not deep inside a run). Derive variants with :meth:`RunSettings.evolve` (``attrs.evolve``).

Thread safety: a ``RunSettings`` is immutable and may be shared by any number of runs and threads (the
objects it holds, such as a store or an executor, document their own rules).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ._agentloop.timeouts import Timeouts
from ._agentloop.tools import Tool, as_tools
from ._agentloop.values import Callbacks, LoopSettings
from ._messages import ToolCallPart
from ._stores.history import History
from ._stores.memory import ConversationStore

if TYPE_CHECKING:
    from ._agentloop.executors import ToolExecutor
    from ._agentloop.stop import StopCondition

__all__ = ["CLIRun", "RunSettings"]

PluginSpec = str | tuple[str, Mapping[str, Any]] | object
"""A run plugin: a registered name (``"cache"``), ``(name, {options})``, or an object with ``@hookimpl``
run-hook methods."""


def _tools(value: Iterable[Any] | None) -> tuple[Tool, ...]:
    return tuple(as_tools(value).values())


def _tuple(value: Iterable[Any] | None) -> tuple[Any, ...]:
    if isinstance(value, (str, bytes)):
        raise TypeError(f"expected a list, not the string {value!r}")
    return tuple(value or ())


def _dict(value: Mapping[str, Any] | None) -> dict[str, Any]:
    return dict(value or {})


def _timeouts(value: Timeouts | dict[str, Any] | None) -> Timeouts:
    return Timeouts.coerce(value)


def _callbacks(value: Callbacks | None) -> Callbacks:
    return value if value is not None else Callbacks()


def _loop(value: LoopSettings | dict[str, Any] | None) -> LoopSettings:
    return LoopSettings.coerce(value)


def _optional(kind: type | tuple[type, ...]) -> Callable[[Any, attrs.Attribute[Any], Any], None]:
    def check(_inst: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if value is not None and not isinstance(value, kind):
            raise TypeError(f"RunSettings.{attribute.name} must be {_names(kind)} or None, "
                            f"not {type(value).__name__}")
    return check


def _names(kind: type | tuple[type, ...]) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    return " or ".join(k.__name__ for k in kinds)


def _callable_or_none(_inst: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"RunSettings.{attribute.name} must be callable or None, not {type(value).__name__}")


def _at_least_one(_inst: Any, attribute: attrs.Attribute[Any], value: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"RunSettings.{attribute.name} must be an int, not {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{attribute.name} must be at least 1, got {value}")


@attrs.frozen(slots=True, kw_only=True)
class RunSettings:
    """How a run goes, beyond its model and messages. Every field is optional.

    * ``tools``: functions (schema from signature and docstring), :class:`~hookstream.Tool` objects or
      ``{"name", "description", "parameters"}`` dicts (client tools); kept as a tuple of ``Tool``.
    * ``system``: a system prompt put first when the messages have none.
    * ``max_steps``: most model calls (at least 1, default 10). ``max_tokens``: output tokens per call.
      ``temperature``, ``tool_choice`` (``"auto"``, ``"required"``, ``"none"`` or a tool name),
      ``options`` (provider-specific request-body fields, merged last).
    * ``executor``: a tool-executor name (``"thread"``), ``(name, *args)`` or a
      :class:`~hookstream.plugin.ToolExecutor`. ``stop_when``: stop conditions (callables or ``(name, *args)``).
    * ``approve(call) -> bool``: decides tools that need approval (none: the run ends with an interrupt).
    * ``timeouts`` (:class:`~hookstream.Timeouts` or a dict, seconds), ``callbacks``
      (:class:`~hookstream.Callbacks`), ``loop`` (:class:`~hookstream.LoopSettings` or a dict).
    * ``observers``: run observers beside the ones plugins register; ``plugins``: run plugins chosen for
      this run by name, ``(name, {options})`` or as objects (``docs/writing-a-run-plugin.md``).
    * ``output``: structured output spec (a JSON Schema dict, a dataclass, a pydantic model,
      :class:`~hookstream.Output`); ``context``: the application's object tools get as ``ctx.deps``.
    * ``memory``: a :class:`~hookstream.stores.ConversationStore`; ``history``: a :class:`~hookstream.stores.History`.

    Raises :class:`TypeError` (wrong type, unknown field) or :class:`ValueError` (``max_steps`` < 1,
    two tools of one name) at construction.
    """

    tools: tuple[Tool, ...] = attrs.field(default=(), converter=_tools)
    system: str | None = attrs.field(default=None, validator=_optional(str))
    max_steps: int = attrs.field(default=10, validator=_at_least_one)
    tool_choice: str | dict[str, Any] | None = attrs.field(default=None, validator=_optional((str, dict)))
    max_tokens: int | None = attrs.field(default=None, validator=_optional(int))
    temperature: float | None = attrs.field(default=None, validator=_optional((int, float)))
    options: Mapping[str, Any] = attrs.field(factory=dict, converter=_dict)
    executor: str | tuple[Any, ...] | ToolExecutor = "thread"
    stop_when: tuple[StopCondition | str | tuple[Any, ...], ...] = attrs.field(default=(), converter=_tuple)
    approve: Callable[[ToolCallPart], bool] | None = attrs.field(default=None, validator=_callable_or_none)
    timeouts: Timeouts = attrs.field(factory=Timeouts, converter=_timeouts)
    callbacks: Callbacks = attrs.field(factory=Callbacks, converter=_callbacks,
                                       validator=attrs.validators.instance_of(Callbacks))
    loop: LoopSettings = attrs.field(factory=LoopSettings, converter=_loop)
    observers: tuple[Any, ...] = attrs.field(default=(), converter=_tuple)
    plugins: tuple[PluginSpec, ...] = attrs.field(default=(), converter=_tuple)
    output: Any = None
    context: Any = None
    memory: ConversationStore | None = None
    history: History | None = attrs.field(default=None, validator=_optional(History))

    def evolve(self, **changes: Any) -> RunSettings:
        """A copy with ``changes`` (field names as keywords); raises like the constructor."""
        return attrs.evolve(self, **changes)

    @classmethod
    def of(cls, settings: RunSettings | None = None, **changes: Any) -> RunSettings:
        """``settings`` (or the defaults) with ``changes`` applied; ``None`` values in ``changes`` are
        left out, so a caller may pass its optional keywords through unchanged."""
        if settings is not None and not isinstance(settings, RunSettings):
            raise TypeError(f"settings must be a hookstream.RunSettings, not {type(settings).__name__}")
        given = {k: v for k, v in changes.items() if v is not None}
        base = settings if settings is not None else cls()
        return attrs.evolve(base, **given) if given else base


@attrs.define(slots=True)
class CLIRun:
    """What a run command of the CLI (``chat``, ``batch``, ``serve``) hands to
    :func:`hookstream_cli_configure`: the ``command`` name, its :class:`RunSettings` (replace it with
    ``run.settings = run.settings.evolve(...)``), an :class:`contextlib.ExitStack` that closes when the
    command ends (for processes or connections a plugin opens), and for ``batch`` the ``runner``
    factory that builds what runs the chats (``hookstream.batch(runner=...)``: called with the batch's
    :class:`hookstream.plugin.BatchJob`, it returns a :class:`hookstream.plugin.Runner`; ``None``: threads
    in this process), plus ``notes``: lines the command prints to stderr before the chats start
    (``"ray: 4 worker processes on 2 nodes"``), and ``main``: set by a plugin that takes the command over
    (a callable of no arguments run in place of the command's own body, inside ``stack``; ``batch``
    honours it: hookstream-provider-batch's ``--provider-batch``). A second plugin setting it is a usage
    error the plugin raises itself."""

    command: str
    settings: RunSettings
    stack: contextlib.ExitStack = attrs.Factory(contextlib.ExitStack)
    runner: Any = None
    notes: list[str] = attrs.Factory(list)
    main: Callable[[], None] | None = None
