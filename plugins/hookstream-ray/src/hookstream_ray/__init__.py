"""hookstream-ray: run each tool call of an agent loop as a Ray task (``executor="ray"``).

``RayExecutor`` loads on first use (PEP 562): the registry imports this package in every hookstream
process, and most never run a tool on Ray.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .executor import RayExecutor

__all__ = ["RayExecutor"]

__getattr__, __dir__ = lazy_attributes(__name__, {"RayExecutor": "hookstream_ray.executor"})
