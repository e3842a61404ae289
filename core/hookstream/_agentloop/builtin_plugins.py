"""Run plugins the core adds to a run from its settings, on the same hooks as any plugin: ``prepare_step``
(:class:`~hookstream.LoopSettings`) is a ``hookstream_step_start`` implementation and
:class:`~hookstream.Callbacks` (but ``on_chunk``, which sees the engine's own events) implement the step and
run hooks, so a step is shaped and watched one way, through the run hooks, whoever does it.

Thread safety: each holds only the user's functions, called on the run's thread.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._errors import CallbackError
from .._markers import hookimpl
from .._messages import Message
from .._stream.provider import Provider
from .hooks import RunContext, StepContext
from .tools import as_tools
from .values import Callbacks, RunResult, StepSettings, StepStart

if TYPE_CHECKING:
    from .._stream.accumulate import StepResult

__all__ = ["CallbacksPlugin", "PrepareStep"]

log = logging.getLogger("hookstream.engine")


def _observe(fn: Callable[[Any], None] | None, arg: Any) -> None:
    if fn is None:
        return
    try:
        fn(arg)
    except Exception:  # an observer must not break the run; its failure is logged
        log.exception("callback %r failed", getattr(fn, "__name__", fn))


class CallbacksPlugin:
    """:class:`~hookstream.Callbacks` as a run plugin: ``on_step_start`` from ``hookstream_step_start``
    (``trylast``: the step as the other plugins left it), ``on_step_finish`` from ``hookstream_step_end``,
    ``on_error``/``on_abort`` then ``on_finish`` from ``hookstream_run_end``. A callback that raises is logged
    and the run goes on. ``on_chunk`` stays the engine's (it sees the engine's accumulated events)."""

    def __init__(self, callbacks: Callbacks) -> None:
        self.callbacks = callbacks

    @staticmethod
    def wanted(callbacks: Callbacks) -> bool:
        """Whether ``callbacks`` has any function this plugin calls."""
        c = callbacks
        return any(f is not None for f in (c.on_step_start, c.on_step_finish, c.on_finish, c.on_error, c.on_abort))

    @hookimpl(trylast=True)
    def hookstream_step_start(self, step: StepContext) -> None:
        if self.callbacks.on_step_start is None:
            return
        model = step.model
        name = model.model if isinstance(model, Provider) else str(model).partition(":")[2] or str(model)
        _observe(self.callbacks.on_step_start, StepStart(step.number, list(step.steps), list(step.messages), name,
                                                         dict(step.tools), step.tool_choice))

    @hookimpl
    def hookstream_step_end(self, run: RunContext, result: StepResult) -> None:
        _observe(self.callbacks.on_step_finish, result)

    @hookimpl
    def hookstream_run_end(self, run: RunContext, result: RunResult) -> None:
        cbs = self.callbacks
        if result.outcome == "error" and result.error is not None:
            _observe(cbs.on_error, result.error)
        elif result.outcome == "cancelled":
            _observe(cbs.on_abort, result)
        _observe(cbs.on_finish, result)


class PrepareStep:
    """``LoopSettings.prepare_step`` as a run plugin: before each step's request, ``fn(StepStart)`` returns
    a :class:`~hookstream.StepSettings` (or its dict, or ``None``) whose fields replace the step's model,
    tools (``tools``, then ``active_tools`` filters them), tool choice, messages and system prompt.

    ``tryfirst`` and registered after the run's other plugins, so it runs before every other
    ``hookstream_step_start`` implementation, which sees the step as ``prepare_step`` left it. A function
    that raises ends the run with ``RUN_ERROR`` ``callback_error``."""

    def __init__(self, fn: Callable[[StepStart], StepSettings | dict[str, Any] | None]) -> None:
        self.fn = fn

    @hookimpl(tryfirst=True)
    def hookstream_step_start(self, step: StepContext) -> None:
        try:
            raw = self.fn(StepStart(step.number, list(step.steps), list(step.messages), step.model, dict(step.tools),
                                    step.tool_choice))
            s = StepSettings.coerce(raw)
        except Exception as exc:
            raise CallbackError(f"prepare_step failed: {type(exc).__name__}: {exc}") from exc
        if s.model is not None:
            step.model = s.model
        tools = step.tools
        new_tools: Any = s.tools
        if new_tools is not None:
            tools = new_tools if isinstance(new_tools, dict) else as_tools(new_tools)
        if s.active_tools is not None:
            wanted = set(s.active_tools)
            tools = {n: t for n, t in tools.items() if n in wanted}
        step.tools = tools
        if s.tool_choice is not None:
            step.tool_choice = s.tool_choice
        if s.messages is not None:
            step.messages = list(s.messages)
        if s.system is not None:
            step.messages = [Message.system(s.system), *(m for m in step.messages if m.role != "system")]
