"""The hooks ``hookstream serve`` offers plugins (hookstream_server.hookspecs) and the application's
``run_detached``: a trivial plugin sees each POSTed run's input, or takes a run over and starts it with
no client (the POST then reads the run's event log); a continuing run's frames that equal the logged
ones are not logged twice, and one that diverges leaves the log a valid run of its protocol (AG-UI, the
AI SDK's UI message stream). The WSGI application
is called in-process with a SQLite store; the model is a real loopback server through the OpenAI
adapter."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from engine_kit import MODEL, text_body, tool_body
from hookstream import get_model, get_registry
from hookstream.plugin import hookimpl
from hookstream.server import RunInput, TokenAuthenticator, make_app
from hookstream.stores import open_store
from hookstream.testing import LoopbackServer, Response, check_events
from hookstream_server.limits import ServerLimits
from hookstream_server.resume import Recorder
from hookstream_server.runlog import MemoryRunLog
from test_server_steering import call as post
from test_ui_message_stream import frames_to_chunks, rebuild

NEVER = 60.0  # only keeps a broken test from hanging; nothing is timed


def call(app: Any, doc: Any, token: str = "tok-a") -> tuple[str, Any]:
    """POST ``doc`` to ``/``; returns the status line and the response body (an iterable)."""
    return post(app, "/", doc, token)


def events_of(frames: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[len(b"data: "):]) for line in frames.split(b"\n") if line.startswith(b"data: ")]


class Plugin:
    """Sees every run; takes over the runs of threads named ``take-*`` and starts them detached."""

    def __init__(self) -> None:
        self.seen: list[tuple[RunInput, str]] = []

    @hookimpl
    def hookstream_serve_run(self, app: Any, run: RunInput, protocol: str) -> bool | None:
        self.seen.append((run, protocol))
        if not run.thread_id.startswith("take-"):
            return None
        threading.Thread(target=app.run_detached, args=(run, protocol)).start()
        return True


@pytest.fixture
def plugin() -> Iterator[Plugin]:
    p = Plugin()
    pm = get_registry().pm
    pm.register(p, name="test-serve-hooks")
    try:
        yield p
    finally:
        pm.unregister(p)


def _input(thread_id: str) -> dict[str, Any]:
    return {"threadId": thread_id, "runId": f"run-{thread_id}", "tools": [], "context": [], "state": {"k": 1},
            "forwardedProps": None, "messages": [{"id": "u1", "role": "user", "content": "Look a up."}]}


def _app(srv: LoopbackServer, tmp_path: Path) -> Any:
    def lookup(key: str) -> str:
        """Look up a key."""
        return f"value of {key}"

    model = get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test")
    return make_app(model, tools=[lookup], authenticate=TokenAuthenticator({"tok-a": "alice"}), serve_page=False,
                    store=open_store(f"sqlite:///{tmp_path / 'threads.db'}"))


def _read_whole(body: Any) -> list[bytes]:
    """A taken-over POST's answer, read to its end on a thread of its own (``NEVER``: a hang guard)."""
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.extend(body))
    reader.start()
    reader.join(NEVER)
    assert not reader.is_alive(), "the taken-over run's log never ended"
    body.close()
    return got


def _responses() -> list[Response]:
    return [Response(tool_body(("c1", "lookup", {"key": "a"}))), Response(text_body("It is ", "value of a."))]


def test_a_plugin_sees_each_run_and_the_server_runs_it(plugin: Plugin, tmp_path: Path) -> None:
    with LoopbackServer(_responses()) as srv:
        app = _app(srv, tmp_path)
        status, body = call(app, _input("t-1"))
        assert status == "200 OK"
        events = events_of(b"".join(body))
        body.close()
    check_events(events, "run")
    assert events[-1]["type"] == "RUN_FINISHED"
    [(run, protocol)] = plugin.seen
    assert protocol == "agui" and run.thread_id == "t-1" and run.run_id == "run-t-1"
    assert run.principal is not None and run.principal.id == "alice" and run.state == {"k": 1}
    assert [m.role for m in run.messages] == ["user"]
    assert len(srv.requests) == 2


def test_a_plugin_takes_a_run_over_and_the_post_reads_its_log(plugin: Plugin, tmp_path: Path) -> None:
    with LoopbackServer(_responses()) as srv:
        app = _app(srv, tmp_path)
        status, body = call(app, _input("take-1"))
        assert status == "200 OK"
        frames = b"".join(_read_whole(body))
    events = events_of(frames)
    check_events(events, "run")
    assert events[-1]["type"] == "RUN_FINISHED"
    ids = [line for line in frames.split(b"\n") if line.startswith(b"id: ")]
    assert ids == [f"id: run-take-1:{n}".encode() for n in range(1, len(events) + 1)]
    assert len(srv.requests) == 2  # run once, detached
    # The detached run saved what it added to the thread, as a live run does.
    stored = open_store(f"sqlite:///{tmp_path / 'threads.db'}").load("take-1")
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]


def test_a_plugin_takes_an_ai_sdk_chat_over_and_the_post_reads_its_ui_stream(plugin: Plugin, tmp_path: Path) -> None:
    """``run_detached(run, "ui")``: the taken-over ``POST /api/chat`` reads the detached run's log, one
    valid UI message stream whose ``start`` names the run's ``message_id`` (made from the input alone)."""
    chat = {"id": "take-ui-1", "trigger": "submit-message",
            "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Look a up."}]}]}
    with LoopbackServer(_responses()) as srv:
        app = _app(srv, tmp_path)
        status, body = post(app, "/api/chat", chat, "tok-a")
        assert status == "200 OK"
        got = _read_whole(body)
    [(run, protocol)] = plugin.seen
    assert protocol == "ui" and run.message_id
    chunks = frames_to_chunks(got)
    assert chunks[0] == {"type": "start", "messageId": run.message_id} and chunks[-1] == "[DONE]"
    assert chunks[-2]["type"] == "finish" and chunks[-2]["finishReason"] == "stop", chunks[-2]
    message = rebuild(chunks)
    assert "".join(p["text"] for p in message["parts"] if p["type"] == "text").endswith("value of a.")
    assert [p["output"] for p in message["parts"] if p["type"] == "tool-lookup"] == ["value of a"]
    assert len(srv.requests) == 2  # run once, detached


def test_a_taken_over_post_and_the_run_it_starts_here_count_once(plugin: Plugin, tmp_path: Path) -> None:
    """The POST a plugin took over (tailing the log) and the run the plugin starts in this process under
    its ids are one run toward ``max_concurrent_runs``: counted once while either goes on, then not."""
    entered, release = threading.Event(), threading.Event()

    def lookup(key: str) -> str:
        """Look up a key (once the test lets it)."""
        entered.set()
        release.wait(NEVER)
        return f"value of {key}"

    with LoopbackServer(_responses()) as srv:
        model = get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test")
        app = make_app(model, tools=[lookup], authenticate=TokenAuthenticator({"tok-a": "alice"}), serve_page=False,
                       store=open_store(f"sqlite:///{tmp_path / 'threads.db'}"))
        status, body = call(app, _input("take-once"))
        assert status == "200 OK"
        got: list[bytes] = []
        reader = threading.Thread(target=lambda: got.extend(body))
        reader.start()
        assert entered.wait(NEVER)
        assert app.counts.running("alice") == 1  # the POST and its run: one
        release.set()
        reader.join(NEVER)
        body.close()
        assert events_of(b"".join(got))[-1]["type"] == "RUN_FINISHED"
        done = threading.Event()
        for _ in range(int(NEVER / 0.01)):  # the run's count goes just after its last frame is logged
            if app.counts.running("alice") == 0:
                break
            done.wait(0.01)
        assert app.counts.running("alice") == 0


def _frame(ev: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(ev, separators=(",", ":")).encode() + b"\n\n"


RUN = [
    {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
    {"type": "STEP_STARTED", "stepName": "1"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hello"},
    {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
    {"type": "STEP_FINISHED", "stepName": "1"},
    {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
]


def _logged(frames: list[bytes]) -> MemoryRunLog:
    log = MemoryRunLog()
    assert log.start("t", "r", "alice", "agui", 1e12)
    for seq, f in enumerate(frames, 1):
        log.append("t", "r", seq, f)
    return log


def test_a_continuing_run_logs_only_what_follows_the_logged_frames() -> None:
    frames = [_frame(e) for e in RUN]
    log = _logged(frames[:4])
    rec = Recorder(log, ServerLimits(), "t", "r", "alice", "agui", continuing=True)
    assert rec.opened
    sent = [rec.frame(f) for f in frames]
    rec.end()
    got = log.read("t", "r", 0)
    assert got is not None and got[0].ended
    assert [d for _, d in got[1]] == frames  # each once
    assert sent[4].startswith(b"id: r:5\n")


def test_a_continuing_run_that_diverges_leaves_a_valid_run() -> None:
    frames = [_frame(e) for e in RUN]
    log = _logged(frames[:4])  # the first attempt said "Hello" and died
    rec = Recorder(log, ServerLimits(), "t", "r", "alice", "agui", continuing=True)
    again = [*RUN[:3], {**RUN[3], "delta": "Hi there"}, *RUN[4:]]
    for ev in again:
        rec.frame(_frame(ev))
    rec.end()
    got = log.read("t", "r", 0)
    assert got is not None
    events = [json.loads(d[len(b"data: "):]) for _, d in got[1]]
    check_events(events, "run")
    texts = [e for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"]
    assert [(e["messageId"], e["delta"]) for e in texts] == [("m1", "Hello"), ("m1-4", "Hi there")]
    assert [e["type"] for e in events[:4]] == [e["type"] for e in RUN[:4]]  # the logged part stays as it was


UI_RUN = [
    {"type": "start", "messageId": "msg-1"},
    {"type": "start-step"},
    {"type": "text-start", "id": "m1", "providerMetadata": {"hookstream": {"messageId": "m1"}}},
    {"type": "text-delta", "id": "m1", "delta": "Hello"},
    {"type": "tool-input-start", "toolCallId": "c1", "toolName": "lookup"},
    {"type": "tool-input-delta", "toolCallId": "c1", "inputTextDelta": "{}"},
    {"type": "text-end", "id": "m1"},
    {"type": "tool-input-available", "toolCallId": "c1", "toolName": "lookup", "input": {}},
    {"type": "finish-step"},
    {"type": "finish", "finishReason": "stop"},
]


def test_a_continuing_ai_sdk_run_that_diverges_leaves_a_valid_ui_message_stream() -> None:
    """The AI SDK's chunks have their own grammar (resume._GRAMMARS["ui"]): what the logged part left open
    (the text, the tool call's input, the step) is ended, and the second attempt's ids are renamed."""
    frames = [_frame(e) for e in UI_RUN]
    log = MemoryRunLog()
    assert log.start("t", "r", "alice", "ui", 1e12)
    for seq, f in enumerate(frames[:6], 1):  # the first attempt said "Hello", began a call and died
        log.append("t", "r", seq, f)
    rec = Recorder(log, ServerLimits(), "t", "r", "alice", "ui", continuing=True)
    again = [*UI_RUN[:3], {**UI_RUN[3], "delta": "Hi there"}, *UI_RUN[4:]]
    for ev in again:
        rec.frame(_frame(ev))
    rec.frame(b"data: [DONE]\n\n")
    rec.end()
    got = log.read("t", "r", 0)
    assert got is not None
    chunks = frames_to_chunks(d for _, d in got[1])
    assert chunks[:6] == UI_RUN[:6]  # the logged part stays as it was
    assert [c["type"] for c in chunks[6:9]] == ["tool-input-error", "text-end", "finish-step"], chunks[6:9]
    message = rebuild(chunks)
    texts = [(p["text"], p["providerMetadata"]["hookstream"]["messageId"]) for p in message["parts"]
             if p["type"] == "text"]
    assert texts == [("Hello", "m1"), ("Hi there", "m1-6")], message
    calls = [(p["toolCallId"], p["state"]) for p in message["parts"] if p["type"] == "tool-lookup"]
    assert calls == [("c1", "output-error"), ("c1-6", "input-available")], calls
    assert chunks[-1] == "[DONE]" and chunks[-2]["type"] == "finish"


def test_log_then_send_a_frame_is_in_the_sql_log_before_it_is_sent(tmp_path: Path) -> None:
    from hookstream_server.runlog import run_log_of

    url = f"sqlite:///{tmp_path / 'log.db'}"
    log = run_log_of(open_store(url))
    assert log is not None
    rec = Recorder(log, ServerLimits(), "t", "r", "alice", "agui", log_then_send=True)
    assert rec.log_then_send
    frames = [_frame(e) for e in RUN]
    for f in frames[:3]:
        rec.frame(f)  # the run goes on: queued, not written yet
    reader = run_log_of(open_store(url))  # another store object: its own connection, as another worker
    assert reader is not None
    for n in range(1, 4):
        rec.sent()  # waits until frame n is written, at once (no batching delay), then it may be sent
        got = reader.read("t", "r", 0)
        assert got is not None and len(got[1]) >= n
    rec.sent()  # nothing left to wait for


def test_without_log_then_send_sent_waits_for_nothing(tmp_path: Path) -> None:
    log = _logged([])
    rec = Recorder(log, ServerLimits(), "t2", "r", "alice", "agui")
    rec.frame(_frame(RUN[0]))
    rec.sent()
    assert not rec.log_then_send


def test_a_take_over_on_a_server_without_an_event_log_is_refused_and_holds_nothing(tmp_path: Path) -> None:
    """``make_app(resumable=False)``: a plugin that takes the run over gets the POST a ``500`` (nothing
    could tail the run); the POST's count is released and nothing is left offered under its ids."""

    class Taker:
        @hookimpl
        def hookstream_serve_run(self, app: Any, run: RunInput, protocol: str) -> bool | None:
            return True

    pm = get_registry().pm
    pm.register(Taker(), name="test-serve-hooks-taker")
    try:
        with LoopbackServer(_responses()) as srv:
            model = get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test")
            app = make_app(model, authenticate=TokenAuthenticator({"tok-a": "alice"}), serve_page=False,
                           resumable=False)
            status, body = call(app, _input("take-no-log"))
            b"".join(body)
        assert status.startswith("500"), status
        assert app.counts.running("alice") == 0
        assert app.handed.adopt(("take-no-log", "run-take-no-log", "alice")) is None
        assert srv.requests == []
    finally:
        pm.unregister(name="test-serve-hooks-taker")
