"""A real `hookstream serve --demo` process for the Node and browser tests."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator


@contextlib.contextmanager
def serve_demo_process(*extra: str) -> Iterator[str]:
    """Start `hookstream serve --demo --port 0 EXTRA...` and yield its base URL; stop it afterwards."""
    proc = subprocess.Popen([sys.executable, "-m", "hookstream", "serve", "--demo", "--port", "0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on" in line, line + (proc.stderr.read() if proc.stderr else "")
        yield line.rsplit(" ", 1)[-1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
