"""Entry point of the ``hookstream-ray`` distribution: registers the ``ray`` tool executor."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hookstream.plugin import hookimpl


@hookimpl
def hookstream_register_tool_executors(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register :class:`hookstream_ray.executor.RayExecutor` as ``ray``."""
    from .executor import RayExecutor

    register("ray", RayExecutor)
