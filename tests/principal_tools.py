"""Tools of the principal tests (``tests/test_tool_principal.py``), importable by name so a ``hookstream serve
--tool principal_tools:whoami`` process and a ``process`` executor's worker can load them."""

from __future__ import annotations

import os
from typing import Any

from hookstream import ToolContext


def whoami(ctx: ToolContext[Any]) -> dict[str, Any]:
    """Tell who the run is for."""
    who = ctx.principal
    return {"id": who.id if who is not None else None, "claims": dict(who.claims) if who is not None else None,
            "pid": os.getpid()}
