"""Issue 33's done-when test: a scripted 40-step tool loop against a loopback OpenAI Chat Completions server
that refuses, as OpenAI does (HTTP 400, ``context_length_exceeded``), every request whose body is above a set
size. Without compaction the run fails with the typed error; with it the run finishes, by each tier, and
the server checks that no request it got held an unanswered tool call, an orphan result, or a first
message after the system prompt that is not a user message.

The server is a real ``http.server`` on 127.0.0.1 (one per module) streaming chunks it builds from the
request (a scripted model, not a recording): the conversation's tag (``run-...``, in the task and in every
tool call's arguments, so whatever part of the conversation is sent names it) picks its step counter; 40
tool calls, then a text answer. A request without tools is a summary request: it is answered with a
summary naming the tag.
"""

from __future__ import annotations

import http.server
import json
import re
import socketserver
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hookstream import RunResult, chat, get_model
from hookstream.errors import BadRequestError
from hookstream.events import BaseEvent, Custom, RunError
from hookstream.testing import check_events, run_cli
from hookstream_compaction import EVENT, Compaction, CompactionReport

KEY = "sk-test-SECRET-0123456789"
STEPS = 40
LIMIT = 30_000
"""Bytes of a request body the server takes; a 40-step loop with whole tool results needs about 75 000."""
WINDOW = 4_000
"""The context window the runs give: 80 % of it is 12 800 characters by the estimate, well under LIMIT
bytes once JSON's own bytes are added."""
FILLER = "lorem ipsum dolor sit amet " * 60  # 1620 characters per tool result
_TAG = re.compile(r"run-[0-9a-f]{12}")


def fetch(run: str, page: int) -> str:
    """Fetch one page of the report.

    Args:
        run: The run's tag.
        page: The page number.
    """
    return f"{run} page {page}: {FILLER}"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    doc = {"id": "chatcmpl-loop", "object": "chat.completion.chunk", "created": 1767225600, "model": "gpt-4o-mini",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


def _text_answer(text: str) -> list[bytes]:
    return [_chunk({"role": "assistant", "content": ""}), _chunk({"content": text}), _chunk({}, "stop"),
            b"data: [DONE]\n\n"]


def _call_answer(tag: str, page: int) -> list[bytes]:
    call_id = f"call_{tag[4:]}_{page}"
    return [_chunk({"role": "assistant", "content": None}),
            _chunk({"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                                    "function": {"name": "fetch", "arguments": ""}}]}),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": json.dumps({"run": tag, "page": page})}}]}),
            _chunk({}, "tool_calls"), b"data: [DONE]\n\n"]


def pairing_problems(messages: list[dict[str, Any]]) -> list[str]:
    """What a provider would refuse in ``messages`` (OpenAI Chat Completions shape): an assistant tool call
    not answered by the tool messages right after it, a tool message without its call, a first message
    after the system prompt that is not a user message."""
    problems: list[str] = []
    waiting: set[str] = set()
    rest = [m for m in messages if m.get("role") not in ("system", "developer")]
    if rest and rest[0].get("role") != "user":
        problems.append(f"first message after the system prompt is {rest[0].get('role')}")
    for m in rest:
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in waiting:
                problems.append(f"orphan result {m.get('tool_call_id')}")
            waiting.discard(m.get("tool_call_id"))
            continue
        if waiting:
            problems.append(f"unanswered calls {sorted(waiting)}")
        waiting = {c["id"] for c in m.get("tool_calls") or ()}
    if waiting:
        problems.append(f"unanswered calls {sorted(waiting)}")
    return problems


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


class ContextLimitedServer:
    """The scripted provider: ``steps[tag]`` tool loop answers so far, ``bodies`` every request's size by
    tag, ``refused`` the tags of requests answered 400, ``problems`` what :func:`pairing_problems` found."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.steps: dict[str, int] = {}
        self.bodies: dict[str, list[int]] = {}
        self.refused: list[str] = []
        self.summaries: list[str] = []
        self.problems: list[tuple[str, str]] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, events = server.answer(raw)
                if status != 200:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(events[0])))
                    self.end_headers()
                    self.wfile.write(events[0])
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for ev in events:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, raw: bytes) -> tuple[int, list[bytes]]:
        body = json.loads(raw)
        messages = body["messages"]
        found = _TAG.search(json.dumps(messages))
        tag = found.group(0) if found else "untagged"
        with self.lock:
            self.bodies.setdefault(tag, []).append(len(raw))
            self.problems += [(tag, p) for p in pairing_problems(messages)]
            if len(raw) > LIMIT:
                self.refused.append(tag)
                error = {"error": {"message": f"This model's maximum context length is {LIMIT // 4} tokens. However, "
                                              f"your messages resulted in {len(raw) // 4} tokens. Please reduce the "
                                              "length of the messages.",
                                   "type": "invalid_request_error", "param": "messages",
                                   "code": "context_length_exceeded"}}
                return 400, [json.dumps(error).encode()]
            if not body.get("tools"):
                self.summaries.append(tag)
                return 200, _text_answer(f"{tag}: the agent is reading the report page by page.")
            page = self.steps.get(tag, 0) + 1
            self.steps[tag] = page
        if page > STEPS:
            return 200, _text_answer(f"Read all {STEPS} pages of {tag}.")
        return 200, _call_answer(tag, page)


@pytest.fixture(scope="module")
def server() -> Iterator[ContextLimitedServer]:
    srv = ContextLimitedServer()
    try:
        yield srv
    finally:
        srv.close()


def run_loop(server: ContextLimitedServer, plugins: list[Any]) -> tuple[str, list[BaseEvent], RunResult]:
    tag = f"run-{uuid.uuid4().hex[:12]}"
    provider = get_model("openai:gpt-4o-mini", base_url=server.url, api_key=KEY)
    stream = chat(provider, f"Read every page of report {tag} with fetch, one page at a time.", tools=[fetch],
                  max_steps=STEPS + 5, plugins=plugins)
    events = list(stream)
    check_events(events, form="run")
    return tag, events, stream.result()


def reports(events: list[BaseEvent]) -> list[CompactionReport]:
    return [CompactionReport.from_value(e.value) for e in events if isinstance(e, Custom) and e.name == EVENT]


def finished(server: ContextLimitedServer, tag: str, result: RunResult) -> None:
    assert result.error is None and result.outcome == "success", result.error
    assert result.text == f"Read all {STEPS} pages of {tag}."
    assert server.steps[tag] == STEPS + 1 and tag not in server.refused
    # The run's own history has every tool result whole: compaction changed only what was sent.
    results = [r.output for m in result.messages for r in m.tool_results]
    assert results == [fetch(tag, page) for page in range(1, STEPS + 1)]
    assert [p for t, p in server.problems if t == tag] == []
    assert max(server.bodies[tag]) <= LIMIT


def test_without_compaction_the_run_fails_with_the_typed_error(server: ContextLimitedServer) -> None:
    tag, events, result = run_loop(server, [])
    assert isinstance(result.error, BadRequestError)
    assert result.error.status == 400 and "maximum context length" in result.error.message
    last = events[-1]
    assert isinstance(last, RunError) and last.code == "bad_request"
    assert server.refused.count(tag) == 1 and server.steps[tag] < STEPS
    assert [p for t, p in server.problems if t == tag] == []


def test_with_compaction_the_forty_step_loop_finishes(server: ContextLimitedServer) -> None:
    tag, events, result = run_loop(server, [Compaction(context_window=WINDOW)])
    finished(server, tag, result)
    found = reports(events)
    assert found and {r.tier for r in found} == {"tool_results"} and all(r.fits for r in found)
    assert all(r.budget == int(WINDOW * 0.8) and r.context_window == WINDOW for r in found)


def test_the_sliding_window_finishes_the_loop_when_old_results_are_not_enough(server: ContextLimitedServer) -> None:
    tag, events, result = run_loop(server, [Compaction(context_window=WINDOW, keep_tool_results=STEPS)])
    finished(server, tag, result)
    assert {r.tier for r in reports(events)} == {"sliding_window"}
    assert server.summaries.count(tag) == 0


def test_summaries_finish_the_loop_and_are_written_now_and_then(server: ContextLimitedServer) -> None:
    summary_model = get_model("openai:gpt-4o-mini", base_url=server.url, api_key=KEY)
    compaction = Compaction(context_window=WINDOW, keep_tool_results=STEPS, summary_model=summary_model)
    tag, events, result = run_loop(server, [compaction])
    finished(server, tag, result)
    found = reports(events)
    assert {r.tier for r in found} == {"summary"} and all(r.fits for r in found)
    assert 1 <= server.summaries.count(tag) < len(found) // 2  # reused by the steps after it


def test_the_registered_name_takes_options(server: ContextLimitedServer) -> None:
    tag, events, result = run_loop(server, [("compaction", {"context_window": WINDOW, "max_fraction": 0.5})])
    finished(server, tag, result)
    assert {r.budget for r in reports(events)} == {WINDOW // 2}


def test_the_command_line_turns_compaction_on(server: ContextLimitedServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    tag = f"run-{uuid.uuid4().hex[:12]}"
    done = run_cli(["chat", f"Read every page of report {tag} with fetch.", "--model", "openai:gpt-4o-mini",
                    "--base-url", server.url, "--tool", f"{__name__}:fetch", "--max-steps", str(STEPS + 5),
                    "--compact-window", str(WINDOW), "--output", "final-json"])
    assert done.exit_code == 0, done.output
    assert json.loads(done.stdout)["text"] == f"Read all {STEPS} pages of {tag}."
    assert tag not in server.refused and [p for t, p in server.problems if t == tag] == []
