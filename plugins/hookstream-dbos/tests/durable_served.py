"""The tools of the served crash test (``hookstream serve --durable --tool durable_served:tool_a``): each
appends its name and :func:`hookstream_dbos.attempt` to ``$DURABLE_KIT_DIR/tools.log``; ``tool_a`` writes
its worker's pid to ``worker.pid`` and streams two progress events (``CUSTOM`` ``progress``); with
``$DURABLE_KIT_HOLD``, ``tool_b``'s first attempt writes its worker's pid to ``b-running`` there (the
test's barrier: it SIGKILLs that worker) and waits to be killed; with ``$DURABLE_KIT_HOLD_STOP`` too, that
worker, stopped on purpose, never hands its run over (``hookstream_serve_stop``): it waits to be killed,
so a test's SIGKILL cannot come after the worker ended on its own (gunicorn's graceful wait lapsed).
Imported by the arbiter before the fork (``serve`` preloads the application), so every worker has it."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from durable_kit import log_attempt
from hookstream import ToolContext, get_registry, tool
from hookstream.events import Custom
from hookstream.plugin import hookimpl
from hookstream_dbos import attempt


def _logged(name: str) -> Path:
    folder = Path(os.environ["DURABLE_KIT_DIR"])
    log_attempt(folder, name)
    return folder


def tool_a(n: int, ctx: ToolContext) -> str:
    """First tool (writes its worker's pid to ``worker.pid``; streams two progress events)."""
    folder = _logged("tool_a")
    for done in (1, 2):
        ctx.emit(Custom("progress", {"done": done, "of": 2}))
    (folder / "worker.pid.tmp").write_text(str(os.getpid()), "utf-8")
    (folder / "worker.pid.tmp").rename(folder / "worker.pid")
    return f"a{n}"


def tool_b(n: int) -> str:
    """Second tool."""
    folder = _logged("tool_b")
    if attempt() == 1 and os.environ.get("DURABLE_KIT_HOLD"):
        (folder / "b-running.tmp").write_text(str(os.getpid()), "utf-8")
        (folder / "b-running.tmp").rename(folder / "b-running")
        threading.Event().wait(600)  # killed here
    return f"b{n}"


def _pay(amount: int) -> str:
    """Pay once, when approved (writes its worker's pid to ``pay.pid``)."""
    _logged("pay").joinpath("pay.pid").write_text(str(os.getpid()), "utf-8")
    return f"paid {amount}"


pay = tool(_pay, name="pay", needs_approval=True)


class _HoldStop:
    """Holds the stop of the worker whose ``tool_b`` wrote ``b-running`` until it is killed."""

    @hookimpl(tryfirst=True)  # before hookstream-dbos's hand-over (trylast)
    def hookstream_serve_stop(self, app: Any, slot: int) -> None:
        held = Path(os.environ["DURABLE_KIT_DIR"]) / "b-running"
        if held.exists() and held.read_text("utf-8") == str(os.getpid()):
            threading.Event().wait(600)  # killed here


if os.environ.get("DURABLE_KIT_HOLD_STOP"):
    get_registry().pm.register(_HoldStop(), name="durable-kit-hold-stop")
