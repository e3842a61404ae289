"""``hookstream serve --durable`` and the AI SDK's route (``POST /api/chat``, resumed by
``GET /api/chat/{id}/stream``), with real DBOS (SQLite; PostgreSQL when it starts), real gunicorn
(``--workers 2``), ``--auth-tokens`` for alice and bob, a store and a loopback model server playing the
three-step tool loop (tool_a, block, the answer): the worker that streams alice's chat is SIGKILLed
while ``block`` runs; DBOS recovers the run in a live worker; alice's reconnect reads the chat's stream
whole, each UI message stream part once, one valid stream ending ``finish`` then ``[DONE]``; the model
server saw each completed request once, tool_a ran once. Bob reading her chat's stream (before the kill,
while the run is recovered and after it ended) gets the answer for a chat that does not exist. A chat
that ends waiting for an approval is a durable wait, and the AI SDK's answer continues it.

Causal order only: ``block`` writes ``started-7-ATTEMPT`` (the kill waits for the first, the reconnect
is open before the second is released), never a time bound.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest
import requests

pytest.importorskip("gunicorn", reason="serve --workers needs gunicorn: pip install 'hookstream[serve]'")

from hookstream.testing import LoopbackServer, Response
from hookstream.testing.provider_bodies import provider_stream
from test_durable_run import ANSWER, db_url, scripted_bodies  # noqa: F401  (db_url: the fixture)
from test_durable_serve import TOKENS, WAIT, _wait_for, durable_db, run_folders, serve, thread_store  # noqa: F401  (durable_db: the fixture)
from test_ui_message_stream import answer_approvals, frames_to_chunks, rebuild  # the core's AI SDK stream checks

E2E = Path(__file__).resolve().parents[3] / "tests" / "e2e"


def _script() -> LoopbackServer:
    """The crashed chat: tool_a (call_a), then ``block`` (call_b, n=7), then the answer. The approval's
    chat: ``pay`` (call_p, 5, needs an approval), then the answer."""
    bodies = scripted_bodies()
    block = provider_stream("openai", text="Now b. ", reasoning="", tool_name="block", tool_args={"n": 7}).events
    pay = provider_stream("openai", text="Paying. ", reasoning="", tool_name="pay", tool_args={"amount": 5}).events
    events = [[e.replace(b"call_fault1", b"call_a") for e in bodies[0]],
              [e.replace(b"call_fault1", b"call_b") for e in block], bodies[2],
              [e.replace(b"call_fault1", b"call_p") for e in pay], bodies[2]]
    return LoopbackServer([Response(pieces=e) for e in events]).start()


def _headers(who: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {TOKENS[who]}"}


def _read(resp: requests.Response, into: list[bytes]) -> None:
    """Append each SSE frame (its ``id:`` and ``data:`` lines) of ``resp`` until it ends or breaks."""
    with contextlib.suppress(requests.RequestException):
        frame: list[bytes] = []
        for line in resp.iter_lines():
            if line:
                frame.append(line)
            elif frame:
                into.append(b"\n".join(frame) + b"\n\n")
                frame = []


def _reader(resp: requests.Response, into: list[bytes]) -> threading.Thread:
    reader = threading.Thread(target=_read, args=(resp, into))
    reader.start()
    return reader


def _stream(base: str, who: str, chat_id: str) -> tuple[int, bytes]:
    with requests.get(f"{base}/api/chat/{chat_id}/stream", headers=_headers(who), timeout=WAIT) as resp:
        return resp.status_code, resp.content


def _same_as_none(base: str, who: str, chat_id: str) -> None:
    """``who`` reading the stream of ``chat_id`` gets what reading a chat that never was gets."""
    theirs, none = _stream(base, who, chat_id), _stream(base, who, f"no-such-chat-{uuid.uuid4().hex[:8]}")
    assert theirs == none == (204, b""), (theirs, none)


def _node_reads(base: str, chat_id: str) -> subprocess.Popen[str] | None:
    """The AI SDK's own resume path (``tests/e2e/resume_check.mjs``: ``reconnectToStream`` and
    ``readUIMessageStream``) reading alice's chat, connected; ``None`` without Node and the ``ai`` package."""
    node = shutil.which("node")
    if node is None or not (E2E / "node_modules" / "ai" / "package.json").is_file():
        return None
    proc = subprocess.Popen([node, str(E2E / "resume_check.mjs"), base, chat_id, TOKENS["alice"]], cwd=E2E,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert json.loads(line or "{}").get("connected") is True, line + (proc.stderr.read() if proc.stderr else "")
    return proc


def _check_message(message: dict[str, Any]) -> None:
    """The chat's answer as a client rebuilds it: each tool part once, with its output, and the answer."""
    assert "".join(p["text"] for p in message["parts"] if p["type"] == "text").endswith(ANSWER), message
    tools = [(p["type"], p["toolCallId"], p["state"], p.get("output")) for p in message["parts"]
             if p["type"].startswith("tool-")]
    assert tools == [("tool-tool_a", "call_a", "output-available", "a1"),
                     ("tool-block", "call_b", "output-available", "blocked 7")], tools
    assert message["metadata"]["hookstream"]["outcome"] == "success", message["metadata"]


def test_a_killed_workers_ai_sdk_chat_is_recovered_and_its_stream_resumes_whole(durable_db: str,  # noqa: F811
                                                                                 tmp_path: Path) -> None:
    folder, tokens = run_folders(tmp_path)
    store = thread_store(durable_db, tmp_path)
    chat_id = f"chat-{uuid.uuid4().hex[:12]}"
    chat = {"id": chat_id, "trigger": "submit-message",
            "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Run a then b."}]}]}
    with _script() as model, serve(model.url, store, folder, "--tool", "durable_attack_tools:block",
                                   "--tool", "durable_attack_tools:pay",
                                   "--auth-tokens", str(tokens), "--durable", "--durable-db", durable_db,
                                   "--durable-name", "ui", hold=False) as base:
        before: list[bytes] = []
        resp = requests.post(base + "/api/chat", json=chat, headers=_headers("alice"), stream=True, timeout=WAIT)
        assert resp.status_code == 200, resp.text
        reader = _reader(resp, before)
        _wait_for(folder / "started-7-1", "block's first attempt")
        _same_as_none(base, "bob", chat_id)  # before the kill
        os.kill(int((folder / "started-7-1").read_text("utf-8")), signal.SIGKILL)  # the streaming worker
        reader.join(WAIT)
        assert not reader.is_alive(), "the killed worker's stream never ended"
        resp.close()
        assert before and b'"finish"' not in before[-1], before[-1:]
        assert len(model.requests) == 2  # tool_a's call and block's call; block was running

        # Alice reconnects (as useChat({resume: true}) does): the chat's stream from its start.
        after: list[bytes] = []
        again = requests.get(f"{base}/api/chat/{chat_id}/stream", headers=_headers("alice"), stream=True,
                             timeout=WAIT)
        assert again.status_code == 200, again.text
        assert again.headers["x-vercel-ai-ui-message-stream"] == "v1"
        reader = _reader(again, after)
        node = _node_reads(base, chat_id)
        _same_as_none(base, "bob", chat_id)  # while the run is recovered
        _wait_for(folder / "started-7-2", "the recovered run's block")
        _same_as_none(base, "bob", chat_id)
        (folder / "release-7").write_text("", "utf-8")
        reader.join(WAIT)
        assert not reader.is_alive(), "the resumed stream never ended"
        again.close()

        # Every part once: what alice read first is the resumed stream's start, numbered on, none missing.
        assert after[:len(before)] == before
        ids = [f.split(b"\n", 1)[0] for f in after]
        assert ids == [f"id: {ids[0][4:].decode().rpartition(':')[0]}:{n}".encode() for n in range(1, len(after) + 1)]
        chunks = frames_to_chunks(after)
        assert [c["type"] for c in chunks[:-2]].count("start") == 1 and chunks[0]["type"] == "start"
        assert chunks[-1] == "[DONE]" and chunks[-2]["type"] == "finish" and chunks[-2]["finishReason"] == "stop"
        outputs = [c["toolCallId"] for c in chunks[:-1] if c["type"] == "tool-output-available"]
        assert outputs == ["call_a", "call_b"], outputs
        _check_message(rebuild(chunks))
        if node is not None:  # the AI SDK's own reader agrees (absent Node and `ai`: the Python rebuild only)
            out, err = node.communicate(timeout=WAIT)
            assert node.returncode == 0, err[-3000:]
            read = json.loads(out)
            _check_message(read["message"])
            assert read["afterEnd"] is True  # once the run ended: nothing to resume (204)

        # Each model request once; tool_a once; block, in flight at the kill, again (attempt 2).
        assert [len(r.json()["messages"]) for r in model.requests] == [1, 3, 5]
        assert (folder / "tools.log").read_text("utf-8").splitlines() == ["tool_a 1", "block 7 1", "block 7 2"]
        _same_as_none(base, "bob", chat_id)  # after it ended
        assert _stream(base, "alice", chat_id) == (204, b"")

        from hookstream.stores import open_store

        stored = open_store(store).load(chat_id)
        assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant", "tool", "assistant"]

        _approval_is_a_durable_wait(base, durable_db, folder)


def _post_chat(base: str, chat: dict[str, Any]) -> list[Any]:
    with requests.post(base + "/api/chat", json=chat, headers=_headers("alice"), timeout=WAIT) as resp:
        assert resp.status_code == 200, resp.text
        return frames_to_chunks([resp.content])


def _approval_is_a_durable_wait(base: str, db: str, folder: Path) -> None:
    """A chat that ends waiting for ``pay``'s approval is a durable wait; the AI SDK's answer (the
    message with the approval responded, POSTed again) continues that same durable run."""
    from hookstream_dbos import list_runs
    from hookstream_dbos.serve import served_id

    chat_id = f"chat-{uuid.uuid4().hex[:12]}"
    user = {"id": "u2", "role": "user", "parts": [{"type": "text", "text": "Pay 5."}]}
    chunks = _post_chat(base, {"id": chat_id, "trigger": "submit-message", "messages": [user]})
    finish = chunks[-2]
    assert finish["type"] == "finish" and finish["finishReason"] == "tool-calls", finish
    waiting = served_id(chat_id, finish["messageMetadata"]["hookstream"]["runId"])
    assert [r.state for r in list_runs(db, run_id=waiting)] == ["waiting"]
    message = rebuild(chunks)
    answer = _post_chat(base, {"id": chat_id, "trigger": "submit-message",
                               "messages": [user, answer_approvals(message, True)]})
    assert answer[0] == {"type": "start", "messageId": message["id"]}  # the client's message goes on
    assert answer[-1] == "[DONE]" and answer[-2]["finishReason"] == "stop", answer[-2:]
    done = rebuild(answer, answer_approvals(message, True))
    assert [(p["state"], p.get("output")) for p in done["parts"] if p["type"] == "tool-pay"] == \
        [("output-available", "paid 5")]
    assert "".join(p["text"] for p in done["parts"] if p["type"] == "text").endswith(ANSWER)
    # The answer continued the waiting durable run (it did not start one of its own).
    assert [r.state for r in list_runs(db, run_id=waiting)] == ["finished"]
    assert [line for line in (folder / "tools.log").read_text("utf-8").splitlines() if line.startswith("pay")] == \
        ["pay 5 1"]
