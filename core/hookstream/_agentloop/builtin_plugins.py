"""Run plugins the core adds to a run from its settings, on the same hooks as any plugin: ``prepare_step``
(:class:`~hookstream.LoopSettings`) is a ``hookstream_step_start`` implementation, so a step is shaped one
way, through the run hooks, whoever shapes it.

Thread safety: a :class:`PrepareStep` holds only the user's function; it is called on the run's thread.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._errors import CallbackError
from .._markers import hookimpl
from .._messages import Message
from .hooks import StepContext
from .tools import as_tools
from .values import StepSettings, StepStart

__all__ = ["PrepareStep"]


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
