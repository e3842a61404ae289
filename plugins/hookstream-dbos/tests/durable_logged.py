"""The tools of the command-line crash test's processes (``--tool durable_logged:tool_a``): each appends
its name and :func:`hookstream_dbos.attempt` to ``$DURABLE_KIT_DIR/tools.log``; with ``$DURABLE_KIT_HOLD``
set, ``tool_b`` creates ``b-running`` there (the test's barrier) and waits to be killed."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from durable_kit import log_attempt
from hookstream import tool


def _logged(name: str) -> None:
    folder = Path(os.environ["DURABLE_KIT_DIR"])
    log_attempt(folder, name)
    if name == "tool_b" and os.environ.get("DURABLE_KIT_HOLD"):
        (folder / "b-running").touch()
        threading.Event().wait(600)  # killed here


def tool_a(n: int) -> str:
    """First tool."""
    _logged("tool_a")
    return f"a{n}"


def tool_b(n: int) -> str:
    """Second tool."""
    _logged("tool_b")
    return f"b{n}"


def _pay(amount: int) -> str:
    """Pay once, when approved."""
    _logged("pay")
    return f"paid {amount}"


pay = tool(_pay, name="pay", needs_approval=True)
