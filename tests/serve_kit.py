"""A real `hookstream serve --demo` process for the Node and browser tests."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def serve_demo_process(*extra: str) -> Iterator[str]:
    """Start `hookstream serve --demo --port 0 EXTRA...` and yield its base URL; stop it afterwards."""
    proc = subprocess.Popen([sys.executable, "-m", "hookstream", "serve", "--demo", "--port", "0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on" in line, line + (proc.stderr.read() if proc.stderr else "")
        yield line.split("listening on ", 1)[1].split()[0]  # the URL, also before "(2 workers)" with --workers
    finally:
        proc.terminate()
        proc.wait(timeout=60)  # a hang bound: gunicorn alone may wait 10 s for requests in flight


@contextlib.contextmanager
def serve_process(*args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """Start `hookstream serve --port 0 ARGS...` (a real server process) and yield its base URL (ending
    in ``/``); stop it afterwards. ``env`` replaces the process environment."""
    proc = subprocess.Popen([sys.executable, "-m", "hookstream", "serve", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on" in line, line + (proc.stderr.read() if proc.stderr else "")
        yield line.split("listening on ", 1)[1].split()[0]
    finally:
        proc.terminate()
        proc.wait(timeout=60)  # a hang bound: gunicorn alone may wait 10 s for requests in flight


def messages_after(messages: list[dict[str, Any]], events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The AG-UI conversation after a run: the input plus the assistant and tool messages of its events."""
    out = list(messages)
    current: dict[str, Any] | None = None
    calls: dict[str, dict[str, Any]] = {}
    for ev in events:
        t = ev["type"]
        if t == "STEP_STARTED":
            current = None
        elif t == "TEXT_MESSAGE_START":
            current = {"id": ev["messageId"], "role": "assistant", "content": ""}
            out.append(current)
        elif t == "TEXT_MESSAGE_CONTENT" and current is not None:
            current["content"] += ev["delta"]
        elif t == "TOOL_CALL_START":
            if current is None:
                current = {"id": "asst-" + ev["toolCallId"], "role": "assistant"}
                out.append(current)
            call = {"id": ev["toolCallId"], "type": "function",
                    "function": {"name": ev["toolCallName"], "arguments": ""}}
            current.setdefault("toolCalls", []).append(call)
            calls[ev["toolCallId"]] = call
        elif t == "TOOL_CALL_ARGS":
            calls[ev["toolCallId"]]["function"]["arguments"] += ev["delta"]
        elif t == "TOOL_CALL_RESULT":
            out.append({"id": ev["messageId"], "role": "tool", "toolCallId": ev["toolCallId"],
                        "content": ev["content"]})
    return out
