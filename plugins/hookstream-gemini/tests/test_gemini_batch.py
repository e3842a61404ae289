"""``hookstream batch --provider-batch`` against a loopback server implementing the Gemini API's batch
mode as documented (API reference "Batch API": ``models.batchGenerateContent`` with inline requests, the
``batches/{id}`` operation, inline responses). The answers are built by this test server, not recorded."""

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

MODEL = "gemini-2.0-flash"
PRICE_IN, PRICE_OUT = 0.10, 0.40  # USD per million tokens (list price); the batch price is half



def entry_id(entry: dict[str, Any]) -> str:
    return str(entry["metadata"]["key"])


class BatchServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.ops: dict[str, dict[str, Any]] = {}
        self.requests: dict[str, list[dict[str, Any]]] = {}
        self.submissions = 0
        self.hold = threading.Event()
        self.polled = threading.Event()
        self.ids = itertools.count(1)
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


def _response(entry: dict[str, Any]) -> dict[str, Any]:
    key = entry["metadata"]["key"]
    prompt = entry["request"]["contents"][-1]["parts"][0]["text"]
    if "invalid" in prompt:
        return {"error": {"code": 3, "message": "Request contains an invalid argument."}, "metadata": {"key": key}}
    parts: list[dict[str, Any]] = [{"text": f"Answer: {prompt}"}]
    if "weather" in prompt:
        parts = [{"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}}]
    response = {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
                "modelVersion": MODEL, "responseId": f"resp-{key}"}
    return {"response": response, "metadata": {"key": key}}


class Handler(BaseHTTPRequestHandler):
    server: BatchServer

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, doc: Any) -> None:
        data = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self) -> bool:
        if self.headers.get("x-goog-api-key") == "gm-test":
            return True
        self._send(403, {"error": {"code": 403, "message": "API key not valid.", "status": "PERMISSION_DENIED"}})
        return False

    def do_POST(self) -> None:
        s = self.server
        if not self._authorised():
            return
        if self.path != f"/v1beta/models/{MODEL}:batchGenerateContent":
            return self._send(404, {"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}})
        batch = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["batch"]
        requests = batch["inputConfig"]["requests"]["requests"]
        with s.lock:
            s.submissions += 1
            name = f"batches/b{next(s.ids)}"
            s.requests[name] = requests
            s.ops[name] = {"polls": 0, "name": name, "metadata": {
                "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatch",
                "model": f"models/{MODEL}", "displayName": batch["displayName"], "name": name,
                "state": "BATCH_STATE_PENDING",
                "batchStats": {"requestCount": str(len(requests)), "pendingRequestCount": str(len(requests))}}}
        self._send(200, {k: v for k, v in s.ops[name].items() if k != "polls"})

    def do_GET(self) -> None:
        s = self.server
        if not self._authorised():
            return
        name = self.path.removeprefix("/v1beta/")
        op = s.ops.get(name)
        if op is None:
            return self._send(404, {"error": {"code": 404, "message": "not found", "status": "NOT_FOUND"}})
        with s.lock:
            op["polls"] += 1
            if s.hold.is_set():
                op["metadata"]["state"] = "BATCH_STATE_RUNNING"
            elif op["polls"] >= 2:
                out = [_response(r) for r in s.requests[name]]
                failed = sum("error" in o for o in out)
                op["metadata"]["state"] = "BATCH_STATE_SUCCEEDED"
                op["metadata"]["batchStats"] = {"requestCount": str(len(out)),
                                                "successfulRequestCount": str(len(out) - failed),
                                                "failedRequestCount": str(failed)}
                op["done"] = True
                op["response"] = {
                    "@type": "type.googleapis.com/google.ai.generativelanguage.v1beta.GenerateContentBatchOutput",
                    "inlinedResponses": {"inlinedResponses": out}}
        s.polled.set()
        self._send(200, {k: v for k, v in op.items() if k != "polls"})


@pytest.fixture(scope="module")
def server() -> Iterator[BatchServer]:
    srv = BatchServer()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _args(inp: Path, out: Path, server: BatchServer, *more: str) -> list[str]:
    return [sys.executable, "-m", "hookstream", "batch", str(inp), "--model", f"gemini:{MODEL}", "--provider-batch",
            "--output", str(out), "--base-url", server.url, *more]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GOOGLE_API_KEY"}
    return {**env, "GEMINI_API_KEY": "gm-test"}


def _inputs(path: Path, prompts: dict[str, str]) -> None:
    path.write_text("".join(json.dumps({"id": k, "prompt": v}) + "\n" for k, v in prompts.items()))


def _lines(path: Path) -> dict[str, dict[str, Any]]:
    return {d["id"]: d for d in (json.loads(x) for x in path.read_text().splitlines())}


def test_provider_batch_writes_one_line_per_input(server: BatchServer, tmp_path: Path) -> None:
    server.hold.clear()
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _inputs(inp, {"a": "Capital of France?", "b": "weather in Paris?", "c": "invalid please"})
    before = server.submissions
    proc = subprocess.run(_args(inp, out, server, "--poll-interval", "0", "--max-tokens", "100"), env=_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert server.submissions == before + 1
    sent = {r["metadata"]["key"]: r["request"] for r in server.requests[max(server.requests)]}
    assert set(sent) == {"a", "b", "c"}
    assert sent["a"]["generationConfig"]["maxOutputTokens"] == 100
    lines = _lines(out)
    assert lines["a"]["text"] == "Answer: Capital of France?" and lines["a"]["finish_reason"] == "stop"
    assert lines["a"]["usage"] == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    assert lines["a"]["cost"]["amount"] == pytest.approx((10 * PRICE_IN + 5 * PRICE_OUT) / 1e6 / 2)
    [call] = lines["b"]["tool_calls"]
    assert call["name"] == "get_weather" and call["arguments"] == {"city": "Paris"}
    assert lines["b"]["finish_reason"] == "tool_calls"
    assert lines["c"]["error"]["code"] == "INVALID_ARGUMENT"  # google.rpc.Code 3, named as streamed errors are
    assert "invalid argument" in lines["c"]["error"]["message"]
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
