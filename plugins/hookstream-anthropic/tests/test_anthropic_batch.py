"""``hookstream batch --provider-batch`` against a loopback server implementing Anthropic's Message
Batches as documented (API reference "Message Batches": create, retrieve, results JSON Lines with
``succeeded`` / ``errored`` / ``canceled`` / ``expired`` results). The answers are built by this test
server, not recorded."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

MODEL = "claude-3-5-haiku-20241022"
PRICE_IN, PRICE_OUT = 0.80, 4.00  # USD per million tokens (list price); the batch price is half



def entry_id(entry: dict[str, Any]) -> str:
    return str(entry["custom_id"])


class BatchServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.batches: dict[str, dict[str, Any]] = {}
        self.requests: dict[str, list[dict[str, Any]]] = {}
        self.submissions = 0
        self.hold = threading.Event()
        self.polled = threading.Event()
        self.ids = itertools.count(1)
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def _result(req: dict[str, Any]) -> dict[str, Any]:
    params, cid = req["params"], req["custom_id"]
    prompt = params["messages"][-1]["content"]
    prompt = prompt if isinstance(prompt, str) else prompt[0]["text"]
    if "expire" in prompt:
        return {"custom_id": cid, "result": {"type": "expired"}}
    if "invalid" in prompt:
        return {"custom_id": cid, "result": {"type": "errored", "error": {"type": "error", "error": {
            "type": "invalid_request_error", "message": "messages: text content blocks must be non-empty"}}}}
    content: list[dict[str, Any]] = [{"type": "text", "text": f"Answer: {prompt}"}]
    stop = "end_turn"
    if "weather" in prompt:
        content = [{"type": "text", "text": "Let me check."},
                   {"type": "tool_use", "id": f"toolu_{cid}", "name": "get_weather", "input": {"city": "Paris"}}]
        stop = "tool_use"
    message = {"id": f"msg_{cid}", "type": "message", "role": "assistant", "model": MODEL, "content": content,
               "stop_reason": stop, "stop_sequence": None,
               "usage": {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0,
                         "cache_read_input_tokens": 0}}
    return {"custom_id": cid, "result": {"type": "succeeded", "message": message}}


class Handler(BaseHTTPRequestHandler):
    server: BatchServer

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, doc: Any = None, raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if raw is None else "application/binary")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        if self.headers.get("x-api-key") == "sk-ant-test" and self.headers.get("anthropic-version") == "2023-06-01":
            return True
        self._send(401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}})
        return False

    def _view(self, batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if k != "polls"}

    def do_POST(self) -> None:
        s = self.server
        if not self._authorised():
            return
        if self.path != "/v1/messages/batches":
            return self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": "Not found"}})
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        with s.lock:
            s.submissions += 1
            bid = f"msgbatch_{next(s.ids):04d}"
            s.requests[bid] = body["requests"]
            s.batches[bid] = {"id": bid, "type": "message_batch", "processing_status": "in_progress", "polls": 0,
                              "request_counts": {"processing": len(body["requests"]), "succeeded": 0, "errored": 0,
                                                 "canceled": 0, "expired": 0},
                              "ended_at": None, "created_at": "2026-11-27T12:00:00Z",
                              "expires_at": "2026-11-28T12:00:00Z", "cancel_initiated_at": None, "results_url": None}
        self._send(200, self._view(s.batches[bid]))

    def do_GET(self) -> None:
        s = self.server
        if not self._authorised():
            return
        parts = self.path.split("/")
        if self.path.startswith("/v1/messages/batches/") and len(parts) == 5:
            batch = s.batches[parts[4]]
            with s.lock:
                batch["polls"] += 1
                if not s.hold.is_set() and batch["polls"] >= 2:
                    results = [_result(r) for r in s.requests[batch["id"]]]
                    kinds = [r["result"]["type"] for r in results]
                    batch["request_counts"] = {"processing": 0, **{k: kinds.count(k) for k in
                                                                   ("succeeded", "errored", "canceled", "expired")}}
                    batch["processing_status"] = "ended"
                    batch["ended_at"] = "2026-11-27T12:30:00Z"
                    batch["results_url"] = f"{s.url}/v1/messages/batches/{batch['id']}/results"
            s.polled.set()
            return self._send(200, self._view(batch))
        if self.path.endswith("/results") and len(parts) == 6:
            results = [_result(r) for r in s.requests[parts[4]]]
            return self._send(200, raw=b"".join(json.dumps(r).encode() + b"\n" for r in results))
        self._send(404, {"type": "error", "error": {"type": "not_found_error", "message": "Not found"}})


@pytest.fixture(scope="module")
def server() -> Iterator[BatchServer]:
    srv = BatchServer()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _args(inp: Path, out: Path, server: BatchServer, *more: str) -> list[str]:
    return [sys.executable, "-m", "hookstream", "batch", str(inp), "--model", f"anthropic:{MODEL}", "--provider-batch",
            "--output", str(out), "--base-url", server.url, *more]


def _env() -> dict[str, str]:
    return {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-test"}


def _inputs(path: Path, prompts: dict[str, str]) -> None:
    path.write_text("".join(json.dumps({"id": k, "prompt": v}) + "\n" for k, v in prompts.items()))


def _lines(path: Path) -> dict[str, dict[str, Any]]:
    return {d["id"]: d for d in (json.loads(x) for x in path.read_text().splitlines())}


def test_provider_batch_writes_one_line_per_input(server: BatchServer, tmp_path: Path) -> None:
    server.hold.clear()
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _inputs(inp, {"a": "Capital of France?", "b": "weather in Paris?", "c": "invalid please", "d": "expire me"})
    before = server.submissions
    proc = subprocess.run(_args(inp, out, server, "--poll-interval", "0", "--max-tokens", "100"), env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert server.submissions == before + 1
    sent = {r["custom_id"]: r["params"] for r in server.requests[max(server.requests)]}
    assert set(sent) == {"a", "b", "c", "d"}
    assert "stream" not in sent["a"] and sent["a"]["model"] == MODEL and sent["a"]["max_tokens"] == 100
    lines = _lines(out)
    assert lines["a"]["text"] == "Answer: Capital of France?" and lines["a"]["finish_reason"] == "stop"
    assert lines["a"]["usage"]["input_tokens"] == 10 and lines["a"]["usage"]["output_tokens"] == 5
    assert lines["a"]["cost"]["amount"] == pytest.approx((10 * PRICE_IN + 5 * PRICE_OUT) / 1e6 / 2)
    assert lines["b"]["text"] == "Let me check."
    assert lines["b"]["tool_calls"] == [{"id": "toolu_b", "name": "get_weather", "arguments": {"city": "Paris"}}]
    assert lines["b"]["finish_reason"] == "tool_calls"
    assert lines["c"]["error"]["code"] == "invalid_request_error"
    assert lines["d"]["error"]["code"] == "expired"
    assert not Path(str(out) + ".batch-state.json").exists()


def test_killed_while_polling_resumes_the_same_batch(server: BatchServer, tmp_path: Path) -> None:
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _inputs(inp, {"x": "Capital of Spain?"})
    state = Path(str(out) + ".batch-state.json")
    server.hold.set()
    server.polled.clear()
    before = server.submissions
    args = _args(inp, out, server, "--poll-interval", "0.01")
    proc = subprocess.Popen(args, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert server.polled.wait(60), "the client never polled"
        assert state.exists()
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    server.hold.clear()
    again = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert server.submissions == before + 1
    assert _lines(out)["x"]["text"] == "Answer: Capital of Spain?"
    assert not state.exists()


def test_dry_run_prints_the_batch_entries_and_sends_nothing(server: BatchServer, tmp_path: Path) -> None:
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _inputs(inp, {"a": "Capital of France?"})
    before = server.submissions
    proc = subprocess.run(_args(inp, out, server, "--dry-run"), env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    [entry] = [json.loads(x) for x in proc.stdout.splitlines()]
    assert entry_id(entry) == "a"
    assert "estimated cost at the batch price" in proc.stderr and "USD" in proc.stderr
    assert server.submissions == before and not out.exists()
