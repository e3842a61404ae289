"""Built-in plugin: registered through the ``hookstream`` entry-point group like any other plugin."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ._hookspecs import hookimpl

if TYPE_CHECKING:
    from ._agentloop.executors import ToolExecutor


@hookimpl
def hookstream_register_chunk_strategies(register: Callable[[str, Callable[..., Any]], None]) -> None:
    from ._processing.strategies import ImmediateStrategy

    register("immediate", ImmediateStrategy)


# Executor name -> its class in ._executors.
_EXECUTORS = {"thread": "ThreadExecutor", "sequential": "SequentialExecutor", "bounded": "BoundedExecutor",
              "process": "ProcessExecutor"}


def _executor(name: str, *args: Any, **kwargs: Any) -> ToolExecutor:
    # The executors and the tool machinery they import load when a run first builds one, not when the
    # registry starts: a command that runs no tool (``hookstream replay``) does not pay for them.
    from ._agentloop import executors as _executors

    executor: ToolExecutor = getattr(_executors, _EXECUTORS[name])(*args, **kwargs)
    return executor


@hookimpl
def hookstream_register_tool_executors(register: Callable[[str, Callable[..., Any]], None]) -> None:
    for name in _EXECUTORS:
        register(name, functools.partial(_executor, name))


@hookimpl
def hookstream_register_stop_conditions(register: Callable[[str, Callable[..., Any]], None]) -> None:
    from ._agentloop.stop import BUILTIN

    for name, factory in BUILTIN.items():
        register(name, factory)


@hookimpl
def hookstream_register_providers(register: Callable[[str, Any], None]) -> None:
    # The AG-UI client provider (``agui:URL``) is part of the core: it speaks AG-UI, which the core owns.
    from ._agui_client import AGUIProvider

    register("agui", AGUIProvider)
