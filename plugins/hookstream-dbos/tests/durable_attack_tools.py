"""The tools of the ``serve --durable`` attack test (``--tool durable_attack_tools:NAME``). Each appends
``NAME ARG ATTEMPT`` to ``$DURABLE_KIT_DIR/tools.log``; ``pay_slow`` and ``block`` write their worker's pid
to ``started-ARG-ATTEMPT`` there (the test's barrier) and wait for the file ``release-ARG``."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from hookstream import tool
from hookstream_dbos import attempt

# Seconds a tool waits for its release at most: only a guard against a worker left holding a thread.
# The test's steps while a tool is held each wait up to WAIT (120 s) on a loaded machine, so a bound of
# WAIT could let the tool end by itself mid-test (the run then no longer counted, nor blocking); the
# server is stopped when its test ends, held tools and all.
_BOUND = 600.0


def _logged(name: str, arg: int) -> Path:
    folder = Path(os.environ["DURABLE_KIT_DIR"])
    with open(folder / "tools.log", "a", encoding="utf-8") as f:
        f.write(f"{name} {arg} {attempt()}\n")
    return folder


def _held(folder: Path, arg: int) -> None:
    started = folder / f"started-{arg}-{attempt()}"
    started.with_suffix(".tmp").write_text(str(os.getpid()), "utf-8")
    started.with_suffix(".tmp").rename(started)
    pause = threading.Event()
    for _ in range(int(_BOUND / 0.05)):
        if (folder / f"release-{arg}").exists():
            return
        pause.wait(0.05)


def _pay(amount: int) -> str:
    """Pay ``amount`` once approved."""
    _logged("pay", amount)
    return f"paid {amount}"


def _pay_slow(amount: int) -> str:
    """Pay ``amount`` once approved, after the test releases it."""
    _held(_logged("pay_slow", amount), amount)
    return f"paid {amount}"


def block(n: int) -> str:
    """Run until the test releases it (no approval)."""
    _held(_logged("block", n), n)
    return f"blocked {n}"


pay = tool(_pay, name="pay", needs_approval=True)
pay_slow = tool(_pay_slow, name="pay_slow", needs_approval=True)
