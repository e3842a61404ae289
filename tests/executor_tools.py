"""Module-level tools for the executor tests: a worker process (or a Ray task) imports them by name
(``executor_tools:where``), which closures and lambdas cannot be."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

from hookstream import ToolContext, tool


def where(label: str) -> dict[str, object]:
    """Say which process ran the call.

    Args:
        label: echoed back.
    """
    return {"label": label, "pid": os.getpid()}


def meet(label: str, folder: str, count: int) -> dict[str, object]:
    """Wait until ``count`` calls have written their file in ``folder``: they all run at once.

    Args:
        label: this call's name.
        folder: a folder every call sees.
        count: how many calls meet.
    """
    Path(folder, f"{label}.{os.getpid()}").write_text(label)
    while len(list(Path(folder).iterdir())) < count:
        time.sleep(0.01)
    return {"label": label, "pid": os.getpid()}


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


@tool(name="decorated_where", resources={"num_cpus": 1})
def decorated(label: str) -> dict[str, object]:
    """``where`` as a module-level ``@tool`` object.

    Args:
        label: echoed back.
    """
    return {"label": label, "pid": os.getpid()}


@dataclasses.dataclass(frozen=True)
class AppContext:
    """An application's context for ``chat(context=...)``: pickles, so it reaches worker processes."""

    user: str


def whoami(greeting: str, ctx: ToolContext[AppContext]) -> dict[str, object]:
    """Greet the user of the run's context, from whatever process runs the call.

    Args:
        greeting: the word to greet with.
    """
    return {"text": f"{greeting}, {ctx.deps.user}", "pid": os.getpid(), "call": ctx.tool_call_id}
