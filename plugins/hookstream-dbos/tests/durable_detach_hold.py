"""Fault injection for the served-wait test of a worker killed between journaling its wait and detaching
(``--tool durable_detach_hold:pay``): while ``$DURABLE_KIT_DIR/hold-detach`` exists, the first detach of
a workflow in a worker (``hookstream_dbos.journal._cancel``, which ``Journal.end`` calls once the wait is
journaled) writes the worker's pid to ``detach-held`` there (the test's barrier) and waits to be killed.
Imported by the arbiter before the fork (``serve`` preloads the application), so every worker has it."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from durable_served import pay
from hookstream_dbos import journal

__all__ = ["pay"]

_cancel = journal._cancel


def _held_cancel(run_id: str, *args: Any) -> Any:
    folder = Path(os.environ["DURABLE_KIT_DIR"])
    if (folder / "hold-detach").exists():
        (folder / "detach-held.tmp").write_text(str(os.getpid()), "utf-8")
        (folder / "detach-held.tmp").rename(folder / "detach-held")
        threading.Event().wait(600)  # killed here
    return _cancel(run_id, *args)


journal._cancel = _held_cancel  # the fault's seam (a test kit: the plugin's private step)
