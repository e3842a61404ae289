"""Built-in plugin: registered through the ``hookstream`` entry-point group like any other plugin."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._hookspecs import hookimpl


@hookimpl
def hookstream_register_chunk_strategies(register: Callable[[str, Callable[..., Any]], None]) -> None:
    from ._strategies import ImmediateStrategy

    register("immediate", ImmediateStrategy)


@hookimpl
def hookstream_register_tool_executors(register: Callable[[str, Callable[..., Any]], None]) -> None:
    from ._executors import BoundedExecutor, ProcessExecutor, SequentialExecutor, ThreadExecutor

    register("thread", ThreadExecutor)
    register("sequential", SequentialExecutor)
    register("bounded", BoundedExecutor)
    register("process", ProcessExecutor)


@hookimpl
def hookstream_register_stop_conditions(register: Callable[[str, Callable[..., Any]], None]) -> None:
    from ._stop import BUILTIN

    for name, factory in BUILTIN.items():
        register(name, factory)
