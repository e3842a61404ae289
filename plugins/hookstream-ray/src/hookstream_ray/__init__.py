"""hookstream-ray: run each tool call of an agent loop as a Ray task (``executor="ray"``), and a batch's
chats in Ray worker processes (``hookstream.batch(..., runner=RayRunner())``, ``hookstream batch --ray``).

``RayExecutor`` and ``RayRunner`` load on first use (PEP 562): the registry imports this package in
every hookstream process, and most never use Ray.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hookstream.plugin import lazy_attributes

if TYPE_CHECKING:
    from .batch import RayRunner
    from .executor import RayExecutor

__all__ = ["RayExecutor", "RayRunner"]

__getattr__, __dir__ = lazy_attributes(__name__, {"RayExecutor": "hookstream_ray.executor",
                                                  "RayRunner": "hookstream_ray.batch"})
