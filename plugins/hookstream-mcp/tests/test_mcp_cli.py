"""``hookstream chat --mcp``: MCP servers' tools offered to the model for one run, the servers started
before it and stopped after it (also on errors and Ctrl-C); the plugin imported only when asked for."""

from __future__ import annotations

import json
import os
import re
import selectors
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest
from hookstream.testing import LoopbackServer, Response, run_cli
from mcp_kit import MODEL, NEVER, children, everything_http, text_body, time_command, tool_body, tool_messages

KEEPALIVE = b": keepalive\n\n"


def invoke(srv: LoopbackServer, *args: str) -> Any:
    return run_cli(["chat", "What time is it?", "--model", MODEL, "--base-url", srv.url + "/v1",
                                     *args], env={"OPENAI_API_KEY": "sk-test"})


def test_mcp_stdio_server_tools_in_a_cli_run() -> None:
    before = children()
    responses = [Response(tool_body(("c1", "get_current_time", {"timezone": "Asia/Tokyo"}))),
                 Response(text_body("Evening in Tokyo."))]
    with LoopbackServer(responses) as srv:
        res = invoke(srv, "--mcp", " ".join(time_command()), "--output", "events")
    assert res.exit_code == 0, res.output
    (msg,) = tool_messages(srv.requests[1])
    assert json.loads(msg["content"])["timezone"] == "Asia/Tokyo"
    finished = json.loads(res.output.splitlines()[-1])
    assert finished["type"] == "RUN_FINISHED" and finished["outcome"]["type"] == "success"
    assert children() <= before  # the server was stopped when the command ended


@pytest.mark.slow
def test_mcp_http_server_and_a_second_stdio_server_in_one_run() -> None:
    responses = [Response(tool_body(("c1", "echo", {"message": "over HTTP"}),
                                    ("c2", "get_current_time", {"timezone": "UTC"}))),
                 Response(text_body("Both answered."))]
    with everything_http() as url, LoopbackServer(responses) as srv:
        res = invoke(srv, "--mcp", url, "--mcp", " ".join(time_command()))
    assert res.exit_code == 0, res.output
    echo, time = tool_messages(srv.requests[1])
    assert echo["content"] == "Echo: over HTTP" and json.loads(time["content"])["timezone"] == "UTC"
    assert "Both answered." in res.output


def test_a_run_that_fails_still_stops_the_server() -> None:
    before = children()
    error = json.dumps({"error": {"message": "model overloaded", "type": "server_error"}}).encode()
    with LoopbackServer([Response(error, status=400, content_type="application/json")]) as srv:
        res = invoke(srv, "--mcp", " ".join(time_command()))
    assert res.exit_code == 1, res.output
    assert "model overloaded" in res.output
    assert children() <= before


def test_a_server_that_does_not_start_is_an_error_with_exit_code_1() -> None:
    with LoopbackServer([Response(text_body("never asked"))]) as srv:
        res = invoke(srv, "--mcp", "/nonexistent/mcp-server --flag")
    assert res.exit_code == 1
    assert "MCP server /nonexistent/mcp-server --flag: could not start: FileNotFoundError" in res.output
    assert srv.requests == []  # the run never started


def test_without_the_plugin_the_cli_says_to_install_it() -> None:
    # --mcp comes from the plugin: with it not loaded (blocked, as when not installed) the core has no such
    # option, and says which plugin adds it.
    env = {**os.environ, "OPENAI_API_KEY": "sk-test", "HOOKSTREAM_BLOCK_PLUGINS": "mcp"}
    with LoopbackServer([Response(text_body("never asked")), Response(text_body("Fine."))]) as srv:
        base = [sys.executable, "-m", "hookstream", "chat", "What time is it?", "--model", MODEL, "--base-url",
                srv.url + "/v1"]
        res = subprocess.run([*base, "--mcp", "uvx mcp-server-time"], capture_output=True, text=True, env=env,
                             timeout=NEVER)
        plain = subprocess.run([*base, "--output", "events"], capture_output=True, text=True, env=env,
                               timeout=NEVER)  # without --mcp the plugin is not needed
    assert res.returncode == 2
    # Run from a checkout, the hint names the plugin's folder (nothing is on the package index).
    assert re.search(r"--mcp needs the hookstream-mcp plugin: hookstream install \S*plugins/hookstream-mcp\b",
                     res.stderr), res.stderr
    assert plain.returncode == 0, plain.stderr


def _read_until(proc: subprocess.Popen[bytes], marker: bytes) -> bytes:
    assert proc.stdout is not None
    seen = b""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    while marker not in seen:
        sel.select()
        chunk = os.read(proc.stdout.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
    return seen


@pytest.mark.slow
def test_ctrl_c_during_the_run_stops_the_mcp_server_process() -> None:
    script = Path(sys.executable).parent / "hookstream"
    if not script.exists():
        pytest.skip(f"the hookstream console script is not installed next to {sys.executable}")
    # The model streams "Hello", then stalls until the client goes away.
    pieces = [b"data: " + json.dumps({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
                                      "choices": [{"index": 0, "delta": {"content": "Hello"},
                                                   "finish_reason": None}]}).encode() + b"\n\n"]
    with LoopbackServer([Response(pieces=pieces + [KEEPALIVE] * 4000, delay=0.05)]) as srv:
        proc = subprocess.Popen(
            [str(script), "chat", "hi", "--model", MODEL, "--base-url", srv.url + "/v1", "--output", "text",
             "--mcp", " ".join(time_command())],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "OPENAI_API_KEY": "sk-test"})
        head = _read_until(proc, b"Hello")
        assert b"Hello" in head, head
        servers = psutil.Process(proc.pid).children(recursive=True)  # started before the run
        assert servers
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=NEVER)
    assert proc.returncode == 130, err.decode()
    assert b"Traceback" not in err
    # Gone already when the command exits: it stopped and reaped them itself (left behind, a server would
    # only notice its closed stdin later).
    assert not [p for p in servers if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def test_loading_the_plugins_does_not_import_the_mcp_sdk() -> None:
    # The entry point is loaded by every `hookstream` command; the SDK (pydantic, starlette...) only with --mcp.
    code = ("import sys, hookstream; reg = hookstream.get_registry(); "
            "print('mcp' in reg.plugins, 'mcp' in sys.modules, 'hookstream_mcp._server' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=NEVER)
    assert out.stdout.split() == ["True", "False", "False"], out.stderr
