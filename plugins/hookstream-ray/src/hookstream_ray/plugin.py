"""Entry point of the ``hookstream-ray`` distribution: registers the ``ray`` tool executor."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hookstream.plugin import hookimpl

if TYPE_CHECKING:
    from .executor import RayExecutor


def ray_executor(*args: Any, **kwargs: Any) -> RayExecutor:
    """A new :class:`hookstream_ray.executor.RayExecutor` (same arguments)."""
    # Imported here, on the first run that uses it: every hookstream process builds the registry, and
    # most never run a tool on Ray.
    from .executor import RayExecutor

    return RayExecutor(*args, **kwargs)


@hookimpl
def hookstream_register_tool_executors(register: Callable[[str, Callable[..., Any]], None]) -> None:
    """Register :func:`ray_executor` (a :class:`hookstream_ray.executor.RayExecutor`) as ``ray``."""
    register("ray", ray_executor)
