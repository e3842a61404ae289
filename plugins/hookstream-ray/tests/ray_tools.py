"""Module-level tools the Ray tests run on the cluster: the nodes import them by name (``ray_tools:where``),
the cluster fixture puts this folder on their ``PYTHONPATH``."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from hookstream import ToolContext


def _node() -> str | None:
    try:
        import ray

        return str(ray.get_runtime_context().get_node_id())
    except Exception:
        return None


def where(label: str) -> dict[str, object]:
    """Say which process and Ray node ran the call.

    Args:
        label: echoed back.
    """
    return {"label": label, "pid": os.getpid(), "node": _node()}


def whoami(ctx: ToolContext[Any]) -> dict[str, object]:
    """Say who the run is for (``ToolContext.principal``) and where the call ran."""
    who = ctx.principal
    return {"id": who.id if who else None, "claims": dict(who.claims) if who else None, "pid": os.getpid()}


def meet(label: str, folder: str, count: int) -> dict[str, object]:
    """Wait until ``count`` calls have written their file in ``folder``: they all run at once.

    Args:
        label: this call's name.
        folder: a folder every call sees (the nodes share this machine).
        count: how many calls meet.
    """
    Path(folder, f"{label}.{os.getpid()}").write_text(label)
    while len(list(Path(folder).iterdir())) < count:
        time.sleep(0.01)
    return {"label": label, "pid": os.getpid(), "node": _node()}


def hang(pid_file: str) -> str:
    """Write this process's pid to ``pid_file``, then never return.

    Args:
        pid_file: where the pid goes.
    """
    Path(pid_file).write_text(str(os.getpid()))
    while True:
        time.sleep(0.05)


def explode(why: str) -> str:
    """Always raise.

    Args:
        why: the message.
    """
    raise RuntimeError(why)
