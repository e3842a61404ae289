"""Real parts for the scaled-out server tests: a simulated OpenAI provider, `hookstream serve --workers`
processes, a PostgreSQL started by scripts/start-postgres, and an AG-UI client that builds its message
history from the events the way @ag-ui/client does.

The simulated provider is a real HTTP server streaming OpenAI Chat Completions chunks (SSE, chunked
transfer encoding). Its answer depends only on the conversation it receives, so two clients that make
the server send the same conversation get the same answers (tool call ids are a hash of the
conversation):
- last message a user text ``TAG| look X``: one ``lookup`` call;
- ``TAG| pay N``: ``whoami`` (runs at once) and ``transfer`` (needs approval: the run is interrupted);
- ``TAG| ask Q``: ``confirm``, a client tool (the frontend's; the run ends waiting for its answer);
- last message tool results: a text answer quoting them; any other user text: an echo.
``TAG|`` (the conversation's tag) is left out of the hash, so conversations that differ only by tag get
the same call ids; tests strip it before comparing requests.

The tools are module functions so `serve --tool store_kit:NAME` loads them in every worker process;
``whoami`` and ``transfer`` return the worker's pid, which is how a test knows which process ran them.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import os
import re
import shutil
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
import sseclient
from hookstream import tool
from hookstream.stores import open_store

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
_TAG = re.compile(r"^[^|\s]+\| ")


# -- tools (loaded by the server's workers) ---------------------------------------------------------

def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def whoami() -> str:
    """The serving worker's process id."""
    return f"pid {os.getpid()}"


LEDGER_ENV = "HOOKSTREAM_TEST_LEDGER"


def _transfer(amount: int) -> str:
    """Send money (asks for approval first). With ``$HOOKSTREAM_TEST_LEDGER`` set, each run appends a
    line to that file: how a test sees from outside the server whether a transfer ran."""
    ledger = os.environ.get(LEDGER_ENV)
    if ledger:
        with open(ledger, "a", encoding="utf-8") as f:
            f.write(f"{amount}\n")
    return f"sent {amount} by pid {os.getpid()}"


transfer = tool(_transfer, name="transfer", needs_approval=True)


# -- the simulated provider ---------------------------------------------------------------------------

def strip_tag(text: str) -> str:
    return _TAG.sub("", text)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


_PID = re.compile(r"pid \d+")


def normalized(messages: list[dict[str, Any]]) -> str:
    """A request's messages as canonical JSON with conversation tags and worker pids removed."""
    out = []
    for m in messages:
        m = dict(m)
        if m.get("role") == "user":
            m["content"] = strip_tag(_text(m.get("content")))
        out.append(m)
    return _PID.sub("pid N", json.dumps(out, sort_keys=True))


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    doc = {"id": "chatcmpl-sim", "object": "chat.completion.chunk", "created": 1767225600, "model": "sim",
           "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(doc).encode() + b"\n\n"


def answer(messages: list[dict[str, Any]]) -> list[bytes]:
    """The SSE events answering ``messages`` (see the module docstring)."""
    digest = hashlib.sha1(normalized(messages).encode()).hexdigest()[:16]
    last = messages[-1] if messages else {}
    events = [_chunk({"role": "assistant", "content": ""})]
    calls: list[tuple[str, dict[str, Any]]] = []
    if last.get("role") == "tool":
        results = []
        for m in reversed(messages):
            if m.get("role") != "tool":
                break
            results.insert(0, _text(m.get("content")))
        text = "noted: " + "; ".join(results)
    else:
        said = strip_tag(_text(last.get("content")))
        if said.startswith("look "):
            calls = [("lookup", {"q": said[5:]})]
            text = ""
        elif said.startswith("ask "):
            calls = [("confirm", {"question": said[4:]})]
            text = ""
        elif said.startswith("pay "):
            calls = [("whoami", {}), ("transfer", {"amount": int(said[4:])})]
            text = "Paying. "
        else:
            text = f"echo: {said}"
    if text:
        half = len(text) // 2
        events += [_chunk({"content": text[:half]}), _chunk({"content": text[half:]})]
    for i, (name, args) in enumerate(calls):
        events.append(_chunk({"tool_calls": [{"index": i, "id": f"call_{digest}_{i}", "type": "function",
                                              "function": {"name": name, "arguments": ""}}]}))
        events.append(_chunk({"tool_calls": [{"index": i, "function": {"arguments": json.dumps(args)}}]}))
    events.append(_chunk({}, "tool_calls" if calls else "stop"))
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    events.append(b"data: " + json.dumps({"id": "chatcmpl-sim", "object": "chat.completion.chunk",
                                          "choices": [], "usage": usage}).encode() + b"\n\n")
    events.append(b"data: [DONE]\n\n")
    return events


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 1024


class SimProvider:
    """The simulated OpenAI Chat Completions server; ``delay`` seconds before each SSE event.
    ``requests`` holds every request's ``messages`` in arrival order."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        self.requests: list[list[dict[str, Any]]] = []
        self._holds: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        sim = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with sim._lock:
                    sim.requests.append(body["messages"])
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                hold = sim._hold_of(body["messages"])
                for i, ev in enumerate(answer(body["messages"])):
                    if sim.delay:
                        time.sleep(sim.delay)
                    if i == 2 and hold is not None:  # the answer's first text has gone out
                        hold.wait(30.0)  # 30 s only keeps a broken test from hanging
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(ev), ev))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self._server = _Server(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> SimProvider:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def hold(self, tag: str) -> threading.Event:
        """Hold the answers of the conversation tagged ``tag`` after their first text chunk until the
        returned event is set."""
        with self._lock:
            return self._holds.setdefault(tag, threading.Event())

    def _hold_of(self, messages: list[dict[str, Any]]) -> threading.Event | None:
        with self._lock:
            for m in messages:
                text = _text(m.get("content")) if m.get("role") == "user" else ""
                tag = text.split("| ", 1)[0] if "| " in text else None
                if tag in self._holds:
                    return self._holds[tag]
        return None

    def requests_of(self, tag: str) -> list[str]:
        """The normalized requests of the conversation tagged ``tag``, in order."""
        with self._lock:
            reqs = list(self.requests)
        return [normalized(r) for r in reqs
                if any(m.get("role") == "user" and _text(m.get("content")).startswith(tag + "| ") for m in r)]


# -- the server under test ----------------------------------------------------------------------------

@contextlib.contextmanager
def serve_workers(store_url: str | None, provider_url: str, workers: int = 4, threads: int = 16,
                  extra: tuple[str, ...] = (), env_extra: dict[str, str] | None = None) -> Iterator[str]:
    """`hookstream serve --workers N --store URL EXTRA...` against the simulated provider; yields its base
    URL. ``env_extra`` is added to the server's environment. ``store_url=None`` with one worker: a
    server without a store (waitress)."""
    env = {**os.environ, "OPENAI_API_KEY": "sim-key-not-secret", **(env_extra or {})}
    store = ["--store", store_url] if store_url is not None else []
    cmd = [sys.executable, "-m", "hookstream", "serve", "--workers", str(workers), "--threads", str(threads),
           *store, "--model", "openai:sim", "--base-url", provider_url + "/v1", "--port", "0",
           "--max-steps", "4", "--tool", "store_kit:lookup", "--tool", "store_kit:whoami",
           "--tool", "store_kit:transfer", *extra]
    with tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, cwd=TESTS, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            if "listening on" not in line:
                err.seek(0)
                raise AssertionError(f"serve did not start: {line}{err.read()}")
            yield line.split("listening on ", 1)[1].split()[0].rstrip("/")
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            # The server's log in the test's captured stderr: shown when the test fails.
            err.seek(0)
            sys.stderr.write(err.read())


# -- PostgreSQL ---------------------------------------------------------------------------------------

@contextlib.contextmanager
def postgres() -> Iterator[str]:
    """A throwaway PostgreSQL from scripts/start-postgres; yields its URL. Skips (fails when CI is set)
    when PostgreSQL is not installed or does not start."""
    # Not pytest's tmp_path: as root the cluster belongs to the postgres user, who must reach the directory.
    where = tempfile.mkdtemp(prefix="hookstream-pg-")
    script = str(ROOT / "scripts" / "start-postgres")
    done = subprocess.run([script, where], capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(where, ignore_errors=True)
        why = f"PostgreSQL did not start (scripts/install-postgres, scripts/start-postgres): {done.stderr.strip()}"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    try:
        yield done.stdout.strip()
    finally:
        subprocess.run([script, "--stop", where], capture_output=True)
        shutil.rmtree(where, ignore_errors=True)


# -- an AG-UI client ----------------------------------------------------------------------------------

class Client:
    """One conversation (``thread_id``). ``full=True`` POSTs the whole history it built from the events
    (as @ag-ui/client does), ``full=False`` only its new messages. ``first_event`` holds seconds from
    each POST to its first SSE event."""

    def __init__(self, base: str, tag: str, full: bool, session: requests.Session | None = None,
                 tools: list[dict[str, Any]] | None = None, token: str | None = None) -> None:
        self.tools = tools or []
        self.headers = {"Accept": "text/event-stream", **({"Authorization": f"Bearer {token}"} if token else {})}
        self.base, self.tag, self.full = base, tag, full
        self.thread_id = f"thread-{tag}-{uuid.uuid4().hex[:8]}"
        self.messages: list[dict[str, Any]] = []
        self.session = session or requests.Session()
        self.first_event: list[float] = []
        self.interrupts: list[dict[str, Any]] = []
        self.events: list[dict[str, Any]] = []
        self.last_events: list[dict[str, Any]] = []  # the last run's, to say why an assertion failed

    def say(self, text: str) -> list[dict[str, Any]]:
        msg = {"id": f"user-{uuid.uuid4().hex}", "role": "user", "content": f"{self.tag}| {text}"}
        self.messages.append(msg)
        return self._post([msg])

    def answer(self, tool_call_id: str, content: str) -> list[dict[str, Any]]:
        """Answer a client tool call with a ``tool`` message."""
        msg = {"id": f"tool-{uuid.uuid4().hex}", "role": "tool", "toolCallId": tool_call_id, "content": content}
        self.messages.append(msg)
        return self._post([msg])

    def approve(self) -> list[dict[str, Any]]:
        resume = [{"interruptId": i["id"], "status": "resolved", "payload": {"approved": True}}
                  for i in self.interrupts]
        return self._post([], resume)

    def _post(self, new: list[dict[str, Any]], resume: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        body: dict[str, Any] = {"threadId": self.thread_id, "runId": f"run-{uuid.uuid4().hex}",
                                "messages": list(self.messages) if self.full else new, "tools": self.tools,
                                "state": None, "context": [], "forwardedProps": None}
        if resume is not None:
            body["resume"] = resume
        started = time.perf_counter()
        events: list[dict[str, Any]] = []
        self.last_events = events  # filled as the run's events come
        with self.session.post(self.base + "/", json=body, stream=True, timeout=120,
                               headers=self.headers) as resp:
            assert resp.status_code == 200, resp.text
            for sse in sseclient.SSEClient(resp).events():
                if not events:
                    self.first_event.append(time.perf_counter() - started)
                ev = json.loads(sse.data)
                events.append(ev)
                self._see(ev)
                if ev["type"] in ("RUN_FINISHED", "RUN_ERROR"):
                    # As a UI does: the run is over, the next turn may go out before the body's end.
                    break
        self.events.extend(events)
        assert events and events[-1]["type"] == "RUN_FINISHED", self.last_run()
        outcome = events[-1].get("outcome") or {}
        self.interrupts = (outcome.get("interrupts") or []) if outcome.get("type") == "interrupt" else []
        return events

    def _see(self, ev: dict[str, Any]) -> None:
        kind = ev["type"]
        if kind == "TEXT_MESSAGE_START":
            self.messages.append({"id": ev["messageId"], "role": "assistant", "content": ""})
        elif kind == "TEXT_MESSAGE_CONTENT":
            for m in reversed(self.messages):
                if m["id"] == ev["messageId"]:
                    m["content"] += ev["delta"]
                    break
        elif kind == "TOOL_CALL_START":
            if any(c["id"] == ev["toolCallId"] for m in self.messages for c in m.get("toolCalls", ())):
                return  # a resumed run announcing the calls it answers again
            call = {"id": ev["toolCallId"], "type": "function",
                    "function": {"name": ev["toolCallName"], "arguments": ""}}
            parent = ev.get("parentMessageId")
            last = self.messages[-1] if self.messages else None
            if last is not None and last["role"] == "assistant" and (parent is None or last["id"] == parent):
                last.setdefault("toolCalls", []).append(call)
            else:
                self.messages.append({"id": parent or ev["toolCallId"], "role": "assistant", "toolCalls": [call]})
        elif kind == "TOOL_CALL_ARGS":
            for m in self.messages:
                for c in m.get("toolCalls", ()):
                    if c["id"] == ev["toolCallId"]:
                        c["function"]["arguments"] += ev["delta"]
        elif kind == "TOOL_CALL_RESULT":
            self.messages.append({"id": ev["messageId"], "role": "tool", "toolCallId": ev["toolCallId"],
                                  "content": ev["content"]})

    def last_run(self) -> str:
        """The last run as it ended (its ``RUN_ERROR`` message, or its events' types and its outcome), for
        an assertion's message."""
        events = self.last_events
        end = events[-1] if events else {}
        if end.get("type") == "RUN_ERROR":
            return f"{self.tag}: RUN_ERROR {end.get('code')}: {end.get('message')}"
        kinds = [ev["type"] for ev in events]
        calls = [(ev["toolCallName"], ev["toolCallId"]) for ev in events if ev["type"] == "TOOL_CALL_START"]
        return f"{self.tag} ({self.thread_id}): events {kinds}, tool calls {calls}, outcome {end.get('outcome')}"

    def results(self, name_prefix: str) -> list[str]:
        return [ev["content"] for ev in self.events
                if ev["type"] == "TOOL_CALL_RESULT" and ev["content"].startswith(name_prefix)]


def converse(client: Client, script: list[str]) -> None:
    """Say each line of ``script``; approve every interrupt at once."""
    for text in script:
        client.say(text)
        if client.interrupts:
            client.approve()
            assert not client.interrupts, client.last_run()


def assert_stored_once_in_order(store_url: str, client: Client, script: list[str], roles: list[str]) -> None:
    """The store holds ``client``'s conversation with these ``roles``, each message once, every tool call
    answered once, the user turns in ``script`` order."""
    stored = open_store(store_url).load(client.thread_id)
    assert [m.role for m in stored] == roles, client.tag
    ids = [m.id for m in stored]
    assert len(set(ids)) == len(ids), ids
    results = [r.tool_call_id for m in stored for r in m.tool_results]
    assert len(set(results)) == len(results), results
    assert sorted(results) == sorted(c.id for m in stored for c in m.tool_calls)
    assert [m.text.split("| ", 1)[1] for m in stored if m.role == "user"] == script


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]
