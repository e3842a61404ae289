"""The main job end to end: the bundled demo through the real adapter, engine and tools over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytest.importorskip("hookstream_openai", reason="the demo needs the hookstream-openai plugin installed")

import functools
import threading
from typing import Any

import attrs
from holdkit import NEVER
from hookstream import Observer, Tool, ToolResultPart, chat, get_model
from hookstream.events import from_dict
from hookstream.plugin import ToolInfo
from hookstream.testing import DEMO_MODEL, DEMO_PROMPT, CapturedRequest, check_events, demo_server, demo_tools


class ToolLog(Observer):
    """(tool name, thread, start, end) of each tool call, as the tool's own thread reports its end."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, float, float]] = []

    def tool_end(self, tool: ToolInfo, result: ToolResultPart) -> None:
        assert tool.ended_at is not None
        self.calls.append((tool.name, threading.current_thread().name, tool.started_at, tool.ended_at))


def meeting(tools: list[Tool], barrier: threading.Barrier) -> list[Tool]:
    """``tools`` whose calls each first wait at ``barrier``: they pass only if all of them run at once."""

    def gated(fn: Any) -> Any:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            barrier.wait()
            return fn(*args, **kwargs)

        return call

    return [attrs.evolve(t, fn=gated(t.fn)) for t in tools]


def test_demo_runs_two_steps_with_parallel_tools() -> None:
    log = ToolLog()
    server = demo_server()
    model = get_model(DEMO_MODEL, base_url=server.url + "/v1", api_key="demo-key")
    # The two tool calls meet at a barrier before the demo's own bodies run: if the engine ran them one
    # after the other, the first would wait there alone until the barrier broke (an error result).
    barrier = threading.Barrier(2, timeout=NEVER)
    stream = chat(model, DEMO_PROMPT, tools=meeting(demo_tools(), barrier), max_steps=4, observers=[log])
    try:
        events = list(stream)
        result = stream.result()
    finally:
        server.stop()
    check_events(events, form="run")
    types = [e.type for e in events]
    assert types.count("STEP_STARTED") == 2 and types.count("TOOL_CALL_RESULT") == 2
    assert types.count("RUN_STARTED") == 1 and types[-1] == "RUN_FINISHED"
    # The final text comes after both tool results.
    assert max(i for i, t in enumerate(types) if t == "TOOL_CALL_RESULT") < types.index("TEXT_MESSAGE_CONTENT")
    assert result.outcome == "success" and result.finish_reason == "stop"
    assert "40,575 JPY" in result.text
    assert result.usage.input_tokens == 142 + 231 and result.usage.output_tokens == 58 + 41
    # Request 2 passed the server's pairing check (it answers 400 otherwise) and carried both results.
    assert len(server.requests) == 2
    tool_msgs = [m for m in server.requests[1].json()["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["call_hsdemo_weather01", "call_hsdemo_currency02"]
    # The two tools ran on different threads at the same time (both met at the barrier, unbroken).
    (_, t1, _, _), (_, t2, _, _) = sorted(log.calls)
    assert t1 != t2 and not barrier.broken
    # The conversation keeps each assistant tool-call message paired with its results.
    roles = [m.role for m in result.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]


def test_server_refuses_a_second_request_without_paired_results() -> None:
    body = {"tools": [{"function": {"name": "get_weather"}}, {"function": {"name": "convert_currency"}}],
            "messages": [{"role": "user", "content": "x"}]}
    with demo_server() as server:  # its check is the demo's own
        assert server.check is not None
        problem = server.check(1, CapturedRequest("POST", "/v1/chat/completions", {}, json.dumps(body).encode()))
    assert problem == "second request must carry the assistant tool-call message"


def test_cli_demo_events_pass_the_grammar() -> None:
    proc = subprocess.run([sys.executable, "-m", "hookstream", "demo", "--delay", "0", "--output", "events"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    events = [from_dict(json.loads(line)) for line in proc.stdout.splitlines()]
    check_events(events, form="run")
    assert sum(e.type == "TOOL_CALL_RESULT" for e in events) == 2


def test_cli_demo_text_and_final_json() -> None:
    text = subprocess.run([sys.executable, "-m", "hookstream", "demo", "--delay", "0"],
                          capture_output=True, text=True, timeout=60)
    assert text.returncode == 0, text.stderr
    assert "[tool call] get_weather" in text.stdout and "40,575 JPY" in text.stdout
    final = subprocess.run([sys.executable, "-m", "hookstream", "demo", "--delay", "0", "--output", "final-json"],
                           capture_output=True, text=True, timeout=60)
    doc = json.loads(final.stdout)
    assert doc["finish_reason"] == "stop" and doc["raw_finish_reason"] == "stop" and doc["error"] is None
    assert doc["usage"] == {"input_tokens": 231, "output_tokens": 41}
