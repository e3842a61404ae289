"""Steering a served run: the owner of a thread POSTs a message to ``/agui/threads/{id}/messages`` while
its run waits in a tool, and the next request to the (loopback) model carries it; another principal gets
404, a thread with no running run 404, a finished run 409. The WSGI application is called in-process;
the model is a real loopback server through the real OpenAI adapter."""

from __future__ import annotations

import io
import json
import threading
from typing import Any

from engine_kit import MODEL, body_messages, text_body, tool_body
from hookstream import get_model
from hookstream.server import TokenAuthenticator, make_app
from hookstream.testing import LoopbackServer, Response

NEVER = 60.0  # only keeps a broken test from hanging; nothing is timed


def call(app: Any, path: str, doc: Any, token: str | None) -> tuple[str, Any]:
    """POST ``doc`` to ``path`` (with ``token`` as a bearer token, if any); returns the status line and the
    response body (an iterable)."""
    body = json.dumps(doc).encode()
    env: dict[str, Any] = {"REQUEST_METHOD": "POST", "PATH_INFO": path, "CONTENT_LENGTH": str(len(body)),
                           "wsgi.input": io.BytesIO(body)}
    if token is not None:
        env["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    got: dict[str, str] = {}

    def start_response(status: str, headers: list[tuple[str, str]]) -> None:
        got["status"] = status

    result = app(env, start_response)
    return got["status"], result


def test_the_owner_steers_a_running_thread_and_others_get_404() -> None:
    entered, release = threading.Event(), threading.Event()

    def lookup(key: str) -> str:
        """Look up a key."""
        entered.set()
        assert release.wait(NEVER)
        return f"value of {key}"

    responses = [Response(tool_body(("c1", "lookup", {"key": "a"}))), Response(text_body("Auf Deutsch."))]
    with LoopbackServer(responses) as srv:
        model = get_model(MODEL, base_url=srv.url + "/v1", api_key="sk-test")
        app = make_app(model, tools=[lookup], authenticate=TokenAuthenticator({"tok-a": "alice", "tok-b": "bob"}),
                       serve_page=False)
        run = {"threadId": "t-1", "runId": "r-1", "messages": [{"id": "u1", "role": "user", "content": "Look."}],
               "tools": [], "context": [], "state": None, "forwardedProps": None}
        status, body = call(app, "/", run, "tok-a")
        assert status == "200 OK"
        frames: list[bytes] = []
        reader = threading.Thread(target=lambda: frames.extend(body))
        reader.start()
        assert entered.wait(NEVER)
        steer = {"role": "user", "content": "Answer in German."}
        assert call(app, "/agui/threads/t-1/messages", steer, "tok-b")[0] == "404 Not Found"   # not bob's
        assert call(app, "/agui/threads/t-2/messages", steer, "tok-a")[0] == "404 Not Found"   # no run there
        assert call(app, "/agui/threads/t-1/messages", {"content": 3}, "tok-a")[0] == "400 Bad Request"
        status, answer = call(app, "/agui/threads/t-1/messages", steer, "tok-a")
        assert status == "202 Accepted" and json.loads(b"".join(answer)) == {"queued": True}
        release.set()
        reader.join(NEVER)
        # Every event is out but the response is not closed yet: the run has ended, so it takes nothing.
        assert call(app, "/agui/threads/t-1/messages", steer, "tok-a")[0] == "409 Conflict"
        body.close()
    assert body_messages(srv.requests[1])[-1] == {"role": "user", "content": "Answer in German."}
    # Each frame is "id: <runId>:<seq>" then its "data:" line (resumable runs).
    events = [json.loads(line[len(b"data: "):]) for line in b"".join(frames).split(b"\n")
              if line.startswith(b"data: ")]
    added = [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == "message-added"]
    assert [a["content"] for a in added] == ["Answer in German."]
    assert events[-1]["type"] == "RUN_FINISHED"
    # The run is over: nothing is streaming on that thread any more.
    assert call(app, "/agui/threads/t-1/messages", steer, "tok-a")[0] == "404 Not Found"
