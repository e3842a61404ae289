"""What this plugin's in-process tests share: the tools the CLI tests load with ``--tool
durable_kit:NAME`` (each appends its name to ``CALLS``), and the one DBOS system database of the test
process (:func:`session_url`: DBOS keeps one per process, so every in-process test uses the same file), and
:func:`log_attempt`, with which the crash tests' tools record each run of theirs."""

from __future__ import annotations

import shutil
import tempfile
import threading
from pathlib import Path

CALLS: list[str] = []

_lock = threading.Lock()
_url: str | None = None


def session_url() -> str:
    """This process's durable-run database: a SQLite file in a temporary directory, DBOS launched on it."""
    global _url
    from hookstream_dbos.journal import ensure_dbos

    with _lock:
        if _url is None:
            folder = Path(tempfile.mkdtemp(prefix="hookstream-dbos-"))
            import atexit

            atexit.register(shutil.rmtree, folder, True)
            _url = ensure_dbos(f"sqlite:///{folder / 'durable.sqlite'}")
        return _url


def log_attempt(folder: Path, name: str) -> None:
    """Append ``NAME ATTEMPT`` (:func:`hookstream_dbos.attempt`) to ``folder/tools.log``: the tools of the
    crash tests' processes record each run of theirs with it."""
    from hookstream_dbos import attempt

    with open(folder / "tools.log", "a", encoding="utf-8") as f:
        f.write(f"{name} {attempt()}\n")


def tool_a(n: int) -> str:
    """First tool."""
    CALLS.append("tool_a")
    return f"a{n}"


def tool_b(n: int) -> str:
    """Second tool."""
    CALLS.append("tool_b")
    return f"b{n}"

