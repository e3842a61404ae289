"""The ``agui:`` provider against a real third-party AG-UI server: pydantic-ai's AG-UI adapter in a
Starlette app under uvicorn (tests/agui_peer_app.py), with pydantic-ai's offline TestModel and
FunctionModel, in its own virtual environment made by scripts/install-agui-peer.

The tests skip with a message when that environment is absent, and fail when ``CI`` is set."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hookstream import chat
from hookstream.testing import check_events
from hookstream.testing.conformance import shared_missing

ROOT = Path(__file__).resolve().parent.parent
PEER_PYTHON = ROOT / "benchmarks" / ".venvs" / "agui-peer" / "bin" / "python"
APP = Path(__file__).resolve().parent / "agui_peer_app.py"


@pytest.fixture(scope="module")
def peer() -> Iterator[str]:
    if not PEER_PYTHON.exists():
        shared_missing(f"pydantic-ai AG-UI peer not installed ({PEER_PYTHON} missing): run scripts/install-agui-peer")
    proc = subprocess.Popen([str(PEER_PYTHON), str(APP)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "listening on" in line, line + (proc.stderr.read() if proc.stderr else "")
        yield line.rsplit(" ", 1)[-1].strip()
    finally:
        proc.terminate()
        proc.wait(timeout=60)  # a hang bound: gunicorn alone may wait 10 s for requests in flight


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_cli_chat_gives_test_models_answer(peer):
    done = subprocess.run([sys.executable, "-m", "hookstream", "chat", "what time is it?",
                           "--model", f"agui:{peer}test", "--output", "final-json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    # TestModel calls the agent's own tool, then answers with the tools' results as JSON.
    assert json.loads(doc["text"]) == {"server_clock": "12:00"}
    assert doc["tool_calls"] == []


def test_the_agents_server_tool_is_surfaced_not_run_locally(peer):
    stream = chat(f"agui:{peer}test", "what time is it?")
    events = check_events(list(stream), form="run")
    names = [e.name for e in events if e.type == "CUSTOM"]
    assert names == ["agui-server-tool-call", "agui-server-tool-result", "agui-server-messages"]
    # Kept for history as CUSTOM, never as REASONING_ENCRYPTED_VALUE (AG-UI's is for encrypted reasoning).
    assert not any(e.type == "REASONING_ENCRYPTED_VALUE" for e in events)
    assert stream.result().steps[0].finish_reason == "stop" and stream.result().tool_calls == []
    kept = [p.provider_metadata for p in stream.result().messages[-1].parts if p.provider_metadata]
    assert [m["role"] for m in kept[0]["agui"]["messages"]] == ["assistant", "tool"]


def test_a_frontend_tool_is_called_by_the_agent_run_locally_and_answered(peer):
    ran: list[tuple[int, int]] = []

    def add_logged(a: int, b: int) -> int:
        """Add two integers."""
        ran.append((a, b))
        return a + b

    add_logged.__name__ = "add"
    stream = chat(f"agui:{peer}frontend", "what is 2 + 3?", tools=[add_logged])
    events = check_events(list(stream), form="run")
    result = stream.result()
    assert ran == [(2, 3)]
    assert [s.finish_reason for s in result.steps] == ["tool_calls", "stop"]
    assert result.text == "The sum is 5."
    assert [e.content for e in events if e.type == "TOOL_CALL_RESULT"] == ["5"]


def test_cli_runs_a_frontend_tool_given_with_tool(peer, tmp_path, monkeypatch):
    (tmp_path / "peer_tools.py").write_text("def add(a: int, b: int) -> int:\n    \"\"\"Add two integers.\"\"\"\n"
                                            "    return a + b\n")
    monkeypatch.chdir(tmp_path)
    done = subprocess.run([sys.executable, "-m", "hookstream", "chat", "what is 2 + 3?", "--model",
                           f"agui:{peer}frontend", "--tool", "peer_tools:add"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    assert "[tool result] call_add_1: 5" in done.stdout
    assert done.stdout.strip().endswith("The sum is 5.")


def test_a_remote_approval_interrupt_is_surfaced_and_answered_with_resume(peer):
    first = chat(f"agui:{peer}approval", "send money")
    events = check_events(list(first), form="run")
    interrupts = next(e.value["interrupts"] for e in events if e.type == "CUSTOM" and e.name == "agui-interrupt")
    assert interrupts[0]["toolCallId"] == "pyd_ai_tool_call_id__transfer"
    resume = [{"interruptId": interrupts[0]["id"], "status": "resolved", "payload": {"approved": True}}]
    second = chat(f"agui:{peer}approval", first.result().messages, options={"resume": resume})
    check_events(list(second), form="run")
    assert json.loads(second.result().text) == {"transfer": "transferred 0"}
