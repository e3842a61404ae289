"""Resuming a run's stream (docs/agui-server.md, "Resuming a stream") against real `hookstream serve`
processes: waitress without a store, and `--workers 2` with SQLite and with PostgreSQL, serving the
simulated OpenAI provider of tests/store_kit.py, which holds a conversation's answer after its first
text until the test lets go (so the run is certainly still going when the client comes back).

- A client that disconnects after the third event and reconnects with ``Last-Event-ID`` gets every
  later event once, in order, then the live tail until ``RUN_FINISHED``; the reconnect may land on
  either worker, which reads the log from the shared store.
- Another principal gets the answer for none (``404``, ``204``); a bad ``Last-Event-ID`` ``400``; an
  unknown run ``404``. The servers ping every 0.1 s: every client here reads ``: ping`` comments.
- The log of a finished run expires (the log itself, with a clock).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import sseclient
from hookstream_server.runlog import run_log_of

pytest.importorskip("waitress", reason="hookstream serve needs waitress: pip install 'hookstream[serve]'")

from hookstream.stores import open_store
from hookstream.testing.conformance import shared_missing
from store_kit import SimProvider, postgres, serve_workers

TOKENS = "token-alice alice\ntoken-bob bob\n"
ALICE = {"Authorization": "Bearer token-alice", "Accept": "text/event-stream"}
BOB = {"Authorization": "Bearer token-bob", "Accept": "text/event-stream"}


@pytest.fixture(scope="module")
def sim() -> Iterator[SimProvider]:
    with SimProvider() as provider:
        yield provider


STORES: dict[str, str] = {}  # server URL -> its store's URL


def wait_logged(server: str, thread_id: str, run_id: str) -> None:
    """Until the run is in the server's shared log (its worker writes the log in batches)."""
    url = STORES.get(server)
    if url is None:
        return  # the memory log of one process has it at once
    run_log = run_log_of(open_store(url))
    while run_log.read(thread_id, run_id, 1 << 40) is None:
        time.sleep(0.02)


@pytest.fixture(scope="module", params=["waitress", "workers-sqlite", "workers-postgresql"])
def server(request: pytest.FixtureRequest, sim: SimProvider) -> Iterator[str]:
    if request.param != "waitress" and sys.platform == "win32":
        pytest.skip("gunicorn runs on Unix only")
    if request.param != "waitress":
        pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn: pip install 'hookstream[serve]'")
    with tempfile.TemporaryDirectory() as where:
        tokens = Path(where) / "tokens"
        tokens.write_text(TOKENS)
        # pings every 0.1 s: the held runs below are quiet, so every client here reads SSE comments too
        auth = ("--auth-tokens", str(tokens), "--ping-seconds", "0.1")
        if request.param == "waitress":
            with serve_workers(None, sim.url, workers=1, threads=8, extra=auth) as base:
                yield base
        elif request.param == "workers-sqlite":
            url = f"sqlite:///{where}/threads.db"
            with serve_workers(url, sim.url, workers=2, threads=8, extra=auth) as base:
                STORES[base] = url
                yield base
        else:
            with postgres() as url, serve_workers(url, sim.url, workers=2, threads=8, extra=auth) as base:
                STORES[base] = url
                yield base


def _events(resp: requests.Response) -> Iterator[tuple[str, dict[str, Any]]]:
    for sse in sseclient.SSEClient(resp).events():
        yield sse.id, json.loads(sse.data)


def _start(base: str, sim: SimProvider, tag: str) -> tuple[str, str, Any, requests.Response]:
    """A run of a new thread whose answer the provider holds; returns its ids, the hold, the response."""
    thread_id, run_id = f"thread-{tag}", f"run-{uuid.uuid4().hex}"
    hold = sim.hold(tag)
    body = {"threadId": thread_id, "runId": run_id, "tools": [], "state": None, "context": [],
            "forwardedProps": None, "messages": [{"id": f"u-{tag}", "role": "user", "content": f"{tag}| hi there"}]}
    resp = requests.post(base + "/", json=body, headers=ALICE, stream=True, timeout=60)
    assert resp.status_code == 200, resp.text
    return thread_id, run_id, hold, resp


def test_a_client_that_reconnects_with_last_event_id_gets_the_rest_once(server: str, sim: SimProvider) -> None:
    tag = f"re{uuid.uuid4().hex[:8]}"
    thread_id, run_id, hold, resp = _start(server, sim, tag)
    first: list[tuple[str, dict[str, Any]]] = []
    for got in _events(resp):
        first.append(got)
        if len(first) == 3:
            break
    resp.close()  # the client goes away after the third event, mid-run
    assert [e["type"] for _, e in first] == ["RUN_STARTED", "STEP_STARTED", "TEXT_MESSAGE_START"]
    assert [i for i, _ in first] == [f"{run_id}:1", f"{run_id}:2", f"{run_id}:3"]

    wait_logged(server, thread_id, run_id)
    url = f"{server}/agui/threads/{thread_id}/runs/{run_id}/events"
    with requests.get(url, headers={**BOB, "Last-Event-ID": first[-1][0]}, timeout=60) as other:
        assert other.status_code == 404, other.text  # only the run's owner resumes it
    with requests.get(url, headers={**ALICE, "Last-Event-ID": "another-run:3"}, timeout=60) as bad:
        assert bad.status_code == 400, bad.text
    with requests.get(f"{server}/agui/threads/{thread_id}/runs/run-none/events", headers=ALICE, timeout=60) as none:
        assert none.status_code == 404, none.text

    rest: list[tuple[str, dict[str, Any]]] = []
    with requests.get(url, headers={**ALICE, "Last-Event-ID": first[-1][0]}, stream=True, timeout=60) as again:
        assert again.status_code == 200, again.text
        assert again.headers["Content-Type"].startswith("text/event-stream")
        hold.set()  # the run goes on only now: the resumed stream carries its live tail
        rest = list(_events(again))  # ends when the run has ended
    ids = [int(i.rsplit(":", 1)[1]) for i, _ in rest]
    assert ids == list(range(4, 4 + len(rest))), ids  # every later event, once, in order
    types = [e["type"] for _, e in rest]
    assert types[0] == "TEXT_MESSAGE_CONTENT" and types[-1] == "RUN_FINISHED", types
    text = "".join(e["delta"] for _, e in rest if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text == "echo: hi there"
    assert rest[-1][1]["outcome"]["type"] == "success"

    # Just finished: a reconnect from any event still gets the rest of the logged run, then the end.
    with requests.get(url, headers={**ALICE, "Last-Event-ID": f"{run_id}:{ids[-2]}"}, timeout=60) as late:
        assert late.status_code == 200
        assert [json.loads(line[6:])["type"] for line in late.text.splitlines()
                if line.startswith("data: ")] == ["RUN_FINISHED"]


def test_the_log_is_bounded_and_expires() -> None:
    from hookstream_server.limits import ServerLimits
    from hookstream_server.resume import Recorder, tail
    from hookstream_server.runlog import MemoryRunLog

    now = [1000.0]
    with tempfile.TemporaryDirectory() as where:
        store = open_store(f"sqlite:///{where}/t.db")
        sql = run_log_of(store)
        sql._clock = lambda: now[0]
        for log in (MemoryRunLog(lambda: now[0]), sql):
            limits = ServerLimits(event_log_events=3, event_log_seconds=5.0)
            rec = Recorder(log, limits, "t", "r", "alice", "agui", clock=lambda: now[0])
            frames = [rec.frame(b"data: {}\n\n") for _ in range(5)]
            assert frames[4].startswith(b"id: r:5\n")
            rec.end()
            if log is sql:  # the writer thread batches: wait for the end to be written
                while (got := log.read("t", "r", 0)) is None or not got[0].ended:
                    time.sleep(0.01)
            info, kept = log.read("t", "r", 0)  # type: ignore[misc]
            assert info.truncated and info.ended and [s for s, _ in kept] == [1, 2, 3]
            assert [f[:8] for f in tail(log, "t", "r", 1)] == [b"id: r:2\n", b"id: r:3\n"]
            assert log.latest("t", "agui", "alice") == info and log.latest("t", "agui", "bob") is None
            now[0] += 20.0  # past event_log_seconds after the end (and the next sweep is due)
            assert log.read("t", "r", 0) is None
            assert log.latest("t", "agui", "alice") is None
        # The SQL log also deletes the expired rows, on its next write.
        sql.start("t", "r2", None, "agui", now[0] + 100)
        while sql.read("t", "r2", 0) is None:
            time.sleep(0.01)
        with sqlite3.connect(f"{where}/t.db") as db:
            assert db.execute("SELECT COUNT(*) FROM hookstream_run_events").fetchone() == (0,)
            assert db.execute("SELECT run_id FROM hookstream_runs").fetchall() == [("r2",)]


E2E = Path(__file__).resolve().parent / "e2e"


def test_the_ai_sdk_resume_path_reads_the_resumed_stream_as_the_whole_message(server: str, sim: SimProvider) -> None:
    node = shutil.which("node")
    if node is None or not (E2E / "node_modules" / "ai" / "package.json").is_file():
        shared_missing("Node.js and tests/e2e/node_modules/ai are needed: run scripts/install-browser-deps")
    assert node is not None
    tag = f"ui{uuid.uuid4().hex[:8]}"
    chat_id = f"chat-{tag}"
    with requests.get(f"{server}/api/chat/{chat_id}/stream", headers=ALICE, timeout=60) as none:
        assert none.status_code == 204  # no stream: what reconnectToStream reads as "nothing to resume"
    hold = sim.hold(tag)
    body = {"id": chat_id, "trigger": "submit-message",
            "messages": [{"id": f"u-{tag}", "role": "user", "parts": [{"type": "text", "text": f"{tag}| hi there"}]}]}
    with requests.post(f"{server}/api/chat", json=body, headers=ALICE, stream=True, timeout=60) as resp:
        assert resp.status_code == 200, resp.text
        seen = 0
        for _ in sseclient.SSEClient(resp).events():
            seen += 1
            if seen == 3:
                break  # the page reloads mid-answer
    run_log = STORES.get(server)
    if run_log is not None:  # until the run is in the shared log
        while run_log_of(open_store(run_log)).latest(chat_id, "ui", "alice") is None:  # type: ignore[union-attr]
            time.sleep(0.02)
    with requests.get(f"{server}/api/chat/{chat_id}/stream", headers=BOB, timeout=60) as other:
        assert other.status_code == 204  # another principal: the answer for no stream (issue 38, 12)
    proc = subprocess.Popen([node, str(E2E / "resume_check.mjs"), server, chat_id, "token-alice"], cwd=E2E,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert json.loads(line or "{}").get("connected") is True, line + (proc.stderr.read() if proc.stderr else "")
        hold.set()
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err[-3000:]
    result = json.loads(out)
    message = result["message"]
    assert message["role"] == "assistant"
    assert "".join(p["text"] for p in message["parts"] if p["type"] == "text") == "echo: hi there"
    assert message["metadata"]["hookstream"]["outcome"] == "success"
    assert result["afterEnd"] is True  # once the run has ended: 204, nothing to resume


def test_without_resume_frames_carry_no_id_and_nothing_resumes() -> None:
    import io

    from hookstream.server import make_app
    from hookstream.testing import demo_factory

    pytest.importorskip("hookstream_openai", reason="the demo needs the hookstream-openai plugin installed")
    answers: list[str] = []

    def call(app: Any, method: str, path: str, body: bytes = b"") -> bytes:
        environ = {"REQUEST_METHOD": method, "PATH_INFO": path, "CONTENT_LENGTH": str(len(body)),
                   "wsgi.input": io.BytesIO(body)}
        result = app(environ, lambda status, headers: answers.append(status))
        out = b"".join(result)
        getattr(result, "close", lambda: None)()
        return out

    body = json.dumps({"threadId": "t1", "runId": "r1", "tools": [],
                       "messages": [{"id": "m1", "role": "user", "content": "Weather in Paris?"}]}).encode()
    for resumable in (True, False):
        app = make_app(stream_factory=demo_factory(delay=0), resumable=resumable)
        out = call(app, "POST", "/", body)
        assert out.startswith(b"id: r1:1\ndata: ") is resumable
        again = call(app, "GET", "/agui/threads/t1/runs/r1/events", b"")
        assert answers[-1].startswith("200" if resumable else "404")
        if resumable:  # the finished run, whole, from its log
            assert again == out
        call(app, "GET", "/api/chat/t1/stream")
        assert answers[-1].startswith("204")  # no AI SDK run streaming
