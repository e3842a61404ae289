"""Helpers for the hookstream-mcp tests: where the real MCP servers are, a streamable HTTP server for a
test, the child processes of this test process, and the scripted OpenAI Chat bodies of the core's
``tests/engine_kit.py`` (pytest puts this folder on sys.path; the core's tests folder is added here).

Servers: ``mcp-server-time`` (PyPI, from requirements/test.txt) runs as ``python -m mcp_server_time``;
``@modelcontextprotocol/server-everything`` (npm, pinned in tests/mcp/package-lock.json, installed by
scripts/install-mcp-servers) runs from tests/mcp/node_modules. A missing one skips its tests with the
reason, and fails them when the environment variable ``CI`` is set.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

import psutil
import pytest

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tests"))

from engine_kit import MODEL, body_messages, text_body, tool_body, tool_names  # noqa: E402
from port_kit import listening_ports  # noqa: E402

__all__ = ["MODEL", "NEVER", "body_messages", "children", "everything_command", "everything_http", "missing",
           "text_body", "time_command", "tool_body", "tool_messages", "tool_names"]

# A limit that only keeps a broken test from hanging; it bounds nothing about speed.
NEVER = 60.0
EVERYTHING = REPO / "tests/mcp/node_modules/@modelcontextprotocol/server-everything/dist/index.js"


def missing(message: str) -> NoReturn:
    """Skip with ``message``, or fail when ``CI`` is set (a CI run must not pass by skipping these)."""
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI is set: a missing MCP test server fails the run instead of skipping)",
                    pytrace=False)
    pytest.skip(message)


def time_command() -> list[str]:
    """``mcp-server-time`` as a stdio command run by this interpreter."""
    if importlib.util.find_spec("mcp_server_time") is None:
        missing("mcp-server-time is not installed (pip install -r requirements/test.txt)")
    return [sys.executable, "-m", "mcp_server_time"]


def everything_command(transport: str = "stdio") -> list[str]:
    """The pinned ``server-everything`` as a command: ``stdio`` or ``streamableHttp``."""
    node = shutil.which("node")
    if node is None:
        missing("node is not installed: the server-everything MCP tests need Node.js 20+")
    if not EVERYTHING.is_file():
        missing(f"{EVERYTHING.relative_to(REPO)} is missing: run scripts/install-mcp-servers (npm ci in tests/mcp)")
    return [node, str(EVERYTHING), transport]


@contextmanager
def everything_http() -> Iterator[str]:
    """``server-everything`` serving streamable HTTP on a port it chose; yields its ``/mcp`` URL once it
    says it listens; stopped (and reaped) when the block ends."""
    command = everything_command("streamableHttp")
    # PORT=0: the server binds a port of its own (no pick-and-release race with other tests' servers).
    # Its log line repeats PORT, so the port it got is read from the socket it listens on.
    proc = subprocess.Popen(command, env={**os.environ, "PORT": "0"}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    listening = threading.Event()
    log: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:  # keep reading so the server never blocks on a full pipe
            log.append(line)
            if "listening on port" in line:
                listening.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not listening.wait(NEVER):
            pytest.fail(f"server-everything did not start: {''.join(log)[-2000:]}")
        ports = listening_ports(proc.pid)
        if len(ports) != 1:
            pytest.fail(f"server-everything listens on {sorted(ports)}, one port expected: {''.join(log)[-2000:]}")
        yield f"http://127.0.0.1:{ports.pop()}/mcp"
    finally:
        proc.terminate()
        try:
            proc.wait(NEVER)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(NEVER)


def children() -> set[int]:
    """Pids of this process's live descendants."""
    return {p.pid for p in psutil.Process().children(recursive=True) if p.is_running()
            and p.status() != psutil.STATUS_ZOMBIE}


def tool_messages(req: Any) -> list[dict[str, Any]]:
    """The ``role: tool`` messages of a captured OpenAI Chat request: what the model was given."""
    return [m for m in body_messages(req) if m["role"] == "tool"]
