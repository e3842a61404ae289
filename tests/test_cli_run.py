"""The CLI's exit codes and input checks: ``replay`` fails like ``chat`` on RUN_ERROR, Ctrl-C cancels a
live run cleanly (exit 130, events closed by RUN_FINISHED cancelled), bad ``--max-steps`` and blank
prompts are usage errors, a step-limited run says so, and ``--tool`` finds modules in the current
directory. Runs go through a real loopback OpenAI server; Ctrl-C and ``--tool`` go through a real
subprocess (the console script, as a user runs it)."""

from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from engine_kit import frame, text_body, text_pieces, tool_body
from hookstream.testing import LoopbackServer, Response, run_cli

KEEPALIVE = b": keepalive\n\n"
MODEL = "openai:gpt-4o-mini"


def invoke(*args: str) -> object:
    return run_cli(list(args), env={"OPENAI_API_KEY": "sk-test"})


# -- replay ---------------------------------------------------------------------------------------


def test_replay_exits_1_when_the_stream_ends_in_an_error(tmp_path: Path) -> None:
    body = b"".join(text_pieces("partial")[:2]) + frame({"error": {"message": "boom", "type": "server_error"}})
    (tmp_path / "bad.sse").write_bytes(body)
    res = run_cli(["replay", str(tmp_path / "bad.sse"), "--provider", "openai",
                                    "--output", "final-json"])
    assert res.exit_code == 1, res.output
    doc = json.loads(res.stdout)
    assert doc["text"] == "partial" and doc["error"]


def test_replay_exits_0_on_a_good_stream(tmp_path: Path) -> None:
    (tmp_path / "good.sse").write_bytes(text_body("fine"))
    res = run_cli(["replay", str(tmp_path / "good.sse"), "--provider", "openai"])
    assert res.exit_code == 0, res.output
    assert "fine" in res.stdout


# -- input checks ---------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["0", "-3"])
def test_max_steps_below_one_is_a_usage_error(value: str) -> None:
    with LoopbackServer([Response(text_body("never"))]) as srv:
        res = invoke("chat", "hi", "--model", MODEL, "--base-url", srv.url + "/v1", "--max-steps", value)
        assert res.exit_code == 2, res.output  # type: ignore[attr-defined]
        assert "--max-steps" in res.output and srv.requests == []  # type: ignore[attr-defined]


@pytest.mark.parametrize("prompt", ["", "   \n"])
def test_blank_prompt_is_a_usage_error(prompt: str) -> None:
    with LoopbackServer([Response(text_body("never"))]) as srv:
        res = invoke("chat", prompt, "--model", MODEL, "--base-url", srv.url + "/v1")
        assert res.exit_code == 2, res.output  # type: ignore[attr-defined]
        assert "PROMPT is empty" in res.output and srv.requests == []  # type: ignore[attr-defined]


def test_step_limit_that_cut_the_loop_short_is_said_on_stderr() -> None:
    responses = [Response(tool_body(("c1", "get_weather", {"city": "Paris"}))), Response(text_body("never"))]
    with LoopbackServer(responses) as srv:
        res = invoke("chat", "weather?", "--model", MODEL, "--base-url", srv.url + "/v1", "--max-steps", "1",
                     "--tool", "hookstream._demo:get_weather", "--output", "events")
        assert len(srv.requests) == 1
    assert res.exit_code == 0, res.output  # type: ignore[attr-defined]
    assert "stopped after 1 step(s) (--max-steps)" in res.stderr  # type: ignore[attr-defined]
    lines = [json.loads(x) for x in res.stdout.splitlines()]  # type: ignore[attr-defined]
    assert lines[-2]["type"] == "CUSTOM" and lines[-2]["value"]["stoppedBy"] == "max_steps"


# -- real subprocesses ----------------------------------------------------------------------------


def console_script() -> str:
    script = Path(sys.executable).parent / "hookstream"
    if not script.exists():
        pytest.skip(f"the hookstream console script is not installed next to {sys.executable}")
    return str(script)


def read_until(proc: subprocess.Popen[bytes], marker: bytes) -> bytes:
    """Read the child's stdout until ``marker`` appeared (or the child ended)."""
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


@pytest.mark.parametrize("output", ["events", "text"])
def test_ctrl_c_cancels_the_run_and_exits_130(output: str) -> None:
    # Two text deltas, then the server stalls (keepalive comments) until the client goes away.
    pieces = text_pieces("Hel", "lo")[:3] + [KEEPALIVE] * 4000
    with LoopbackServer([Response(pieces=pieces, delay=0.05)]) as srv:
        proc = subprocess.Popen(
            [console_script(), "chat", "hi", "--model", MODEL, "--base-url", srv.url + "/v1", "--output", output],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "OPENAI_API_KEY": "sk-test"},
        )
        marker = b'"delta":"lo"' if output == "events" else b"Hello"
        head = read_until(proc, marker)
        assert marker in head, head
        proc.send_signal(signal.SIGINT)
        rest, err = proc.communicate(timeout=60)
    out = (head + rest).decode()
    assert proc.returncode == 130, (out, err.decode())
    assert b"Aborted!" not in err and b"Traceback" not in err
    if output == "events":
        last = json.loads(out.splitlines()[-1])
        assert last["type"] == "RUN_FINISHED" and last["outcome"]["type"] == "cancelled", out
    else:
        assert out.count("Hello") == 1, out
        assert "cancelled" in err.decode()


def test_tool_module_in_the_current_directory_is_found(tmp_path: Path) -> None:
    (tmp_path / "mytools.py").write_text(
        "def get_weather(city: str) -> str:\n    \"\"\"Weather.\"\"\"\n    return f'sunny in {city}'\n")
    responses = [Response(tool_body(("c1", "get_weather", {"city": "Paris"}))), Response(text_body("Sunny."))]
    with LoopbackServer(responses) as srv:
        proc = subprocess.run(
            [console_script(), "chat", "weather?", "--model", MODEL, "--base-url", srv.url + "/v1",
             "--tool", "mytools:get_weather"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120,
            env={**os.environ, "OPENAI_API_KEY": "sk-test", "PYTHONPATH": ""},
        )
    assert proc.returncode == 0, proc.stderr
    assert "sunny in Paris" in proc.stdout and "Sunny." in proc.stdout
