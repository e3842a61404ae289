"""hookstream-ray: run each tool call of an agent loop as a Ray task (``executor="ray"``)."""

from __future__ import annotations

from .executor import RayExecutor

__all__ = ["RayExecutor"]
