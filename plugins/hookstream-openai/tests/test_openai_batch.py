"""``hookstream batch --provider-batch`` against a loopback server implementing OpenAI's Batch API as
documented (API reference "Batch" and "Files"): the request file, the batch object, the output and error
files in their documented JSON Lines shapes. The answers are built by this test server, not recorded."""

from __future__ import annotations

import email.parser
import email.policy
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

MODEL = "gpt-4o-mini"
# gpt-4o-mini list prices (USD per million tokens: 0.15 in, 0.60 out); the batch price is half.
PRICE_IN, PRICE_OUT = 0.15, 0.60


class BatchServer(ThreadingHTTPServer):
    """OpenAI Files + Batches on 127.0.0.1. ``hold`` set: every batch stays ``in_progress`` (``polled``
    is set at each poll), so a test can kill its client mid-poll."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.submissions = 0
        self.uploads: list[list[dict[str, Any]]] = []
        self.hold = threading.Event()
        self.hold_tool_rounds = threading.Event()  # set: only batches that carry tool results stay in progress
        self.polled = threading.Event()
        self.ids = itertools.count(1)
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


def _answer(entry: dict[str, Any]) -> dict[str, Any]:
    """One output/error file line for a request line, by what its last user message asks."""
    last = entry["body"]["messages"][-1]
    prompt = last["content"]
    cid = entry["custom_id"]
    if last["role"] == "tool":
        prompt = f"tool said {prompt}"
    if "expire" in prompt:
        return {"id": f"batch_req_{cid}", "custom_id": cid, "response": None,
                "error": {"code": "batch_expired", "message": "This request could not be executed before the "
                          "completion window expired."}}
    if "invalid" in prompt:
        return {"id": f"batch_req_{cid}", "custom_id": cid, "error": None, "response": {
            "status_code": 400, "request_id": f"req_{cid}", "body": {"error": {
                "message": "Invalid value for 'messages'.", "type": "invalid_request_error", "param": "messages",
                "code": None}}}}
    message: dict[str, Any] = {"role": "assistant", "content": f"Answer: {prompt}", "refusal": None,
                               "annotations": []}
    finish = "stop"
    if "weather" in prompt:
        message = {"role": "assistant", "content": None, "refusal": None, "annotations": [], "tool_calls": [
            {"id": f"call_{cid}", "type": "function",
             "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]}
        finish = "tool_calls"
    body = {"id": f"chatcmpl-{cid}", "object": "chat.completion", "created": 1732700000,
            "model": "gpt-4o-mini-2024-07-18",
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            "system_fingerprint": "fp_test"}
    return {"id": f"batch_req_{cid}", "custom_id": cid, "error": None,
            "response": {"status_code": 200, "request_id": f"req_{cid}", "body": body}}


class Handler(BaseHTTPRequestHandler):
    server: BatchServer

    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, status: int, doc: Any = None, raw: bytes | None = None) -> None:
        data = raw if raw is not None else json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if raw is None else "application/octet-stream")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_POST(self) -> None:
        s = self.server
        if self.headers.get("Authorization") != "Bearer sk-test":
            return self._send(401, {"error": {"message": "Incorrect API key", "type": "invalid_request_error"}})
        if self.path == "/v1/files":
            raw = self._body()
            msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
                b"Content-Type: " + self.headers["Content-Type"].encode() + b"\r\n\r\n" + raw)
            parts = {p.get_param("name", header="content-disposition"): p.get_payload(decode=True)
                     for p in msg.iter_parts()}
            assert parts["purpose"] == b"batch"
            with s.lock:
                fid = f"file-{next(s.ids)}"
                s.files[fid] = parts["file"]
            return self._send(200, {"id": fid, "object": "file", "purpose": "batch", "bytes": len(parts["file"])})
        if self.path == "/v1/batches":
            req = json.loads(self._body())
            assert req["endpoint"] == "/v1/chat/completions" and req["completion_window"] == "24h"
            lines = [json.loads(x) for x in s.files[req["input_file_id"]].splitlines() if x.strip()]
            with s.lock:
                s.submissions += 1
                s.uploads.append(lines)
                bid = f"batch_{next(s.ids)}"
                s.batches[bid] = {"id": bid, "object": "batch", "endpoint": req["endpoint"], "status": "validating",
                                  "input_file_id": req["input_file_id"], "completion_window": "24h",
                                  "output_file_id": None, "error_file_id": None, "polls": 0,
                                  "tool_round": any(m["role"] == "tool" for e in lines for m in e["body"]["messages"]),
                                  "request_counts": {"total": len(lines), "completed": 0, "failed": 0}}
            if any("refuse the batch" in e["body"]["messages"][-1]["content"] for e in lines):
                s.batches[bid]["status"] = "failed"
                s.batches[bid]["errors"] = {"object": "list", "data": [
                    {"code": "model_not_found", "message": "The model 'gpt-4o-mini' does not exist.", "line": 1,
                     "param": "body.model"}]}
            return self._send(200, s.batches[bid])
        self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def do_GET(self) -> None:
        s = self.server
        if self.path.startswith("/v1/batches/"):
            batch = s.batches[self.path.rsplit("/", 1)[1]]
            with s.lock:
                batch["polls"] += 1
                if batch["status"] == "failed":
                    pass
                elif s.hold.is_set() or (s.hold_tool_rounds.is_set() and batch["tool_round"]):
                    batch["status"] = "in_progress"
                elif batch["polls"] >= 2 and batch["status"] != "completed":
                    self._finish(batch)
            if batch["status"] == "in_progress":
                s.polled.set()
            return self._send(200, {k: v for k, v in batch.items() if k not in ("polls", "tool_round")})
        if self.path.startswith("/v1/files/") and self.path.endswith("/content"):
            return self._send(200, raw=s.files[self.path.split("/")[3]])
        self._send(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

    def _finish(self, batch: dict[str, Any]) -> None:
        s = self.server
        lines = s.files[batch["input_file_id"]].splitlines()
        answers = [_answer(json.loads(x)) for x in lines if x.strip()]
        ok = [a for a in answers if a["response"] is not None and a["response"]["status_code"] == 200]
        bad = [a for a in answers if a not in ok]
        for key, lines in (("output_file_id", ok), ("error_file_id", bad)):
            if lines:
                fid = f"file-{next(s.ids)}"
                s.files[fid] = b"".join(json.dumps(a).encode() + b"\n" for a in lines)
                batch[key] = fid
        batch["status"] = "completed"
        batch["request_counts"] = {"total": len(answers), "completed": len(ok), "failed": len(bad)}


@pytest.fixture(scope="module")
def server() -> Iterator[BatchServer]:
    srv = BatchServer()
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "hookstream", "batch", *args]


def _env() -> dict[str, str]:
    return {**os.environ, "OPENAI_API_KEY": "sk-test"}


def _write_inputs(path: Path, prompts: dict[str, str]) -> None:
    path.write_text("".join(json.dumps({"id": k, "prompt": v}) + "\n" for k, v in prompts.items()))


def _lines(path: Path) -> dict[str, dict[str, Any]]:
    return {d["id"]: d for d in (json.loads(x) for x in path.read_text().splitlines())}


def test_provider_batch_writes_one_line_per_input(server: BatchServer, tmp_path: Path) -> None:
    server.hold.clear()
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_inputs(inp, {"a": "Capital of France?", "b": "weather in Paris?", "c": "invalid please", "d": "expire me"})
    before = server.submissions
    proc = subprocess.run(_cli(str(inp), "--model", f"openai:{MODEL}", "--provider-batch", "--output", str(out),
                               "--base-url", server.url, "--poll-interval", "0", "--max-tokens", "100"),
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert server.submissions == before + 1
    sent = {e["custom_id"]: e for e in server.uploads[-1]}
    assert set(sent) == {"a", "b", "c", "d"}
    assert sent["a"]["url"] == "/v1/chat/completions" and sent["a"]["method"] == "POST"
    assert "stream" not in sent["a"]["body"] and "stream_options" not in sent["a"]["body"]
    assert sent["a"]["body"]["model"] == MODEL and sent["a"]["body"]["max_tokens"] == 100
    lines = _lines(out)
    assert set(lines) == {"a", "b", "c", "d"}
    a = lines["a"]
    assert a["text"] == "Answer: Capital of France?" and a["finish_reason"] == "stop" and a["error"] is None
    assert a["usage"] == {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}
    assert a["cost"]["currency"] == "USD"
    assert a["cost"]["amount"] == pytest.approx((10 * PRICE_IN + 5 * PRICE_OUT) / 1e6 / 2)
    b = lines["b"]
    assert b["tool_calls"] == [{"id": "call_b", "name": "get_weather", "arguments": {"city": "Paris"}}]
    assert b["finish_reason"] == "tool_calls"
    assert lines["c"]["error"]["code"] == "invalid_request_error"
    assert "Invalid value" in lines["c"]["error"]["message"]
    assert lines["d"]["error"]["code"] == "batch_expired"
    assert not Path(str(out) + ".batch-state.json").exists()
    # Run again: the lines with an error are not done (issue 41.2), so one batch of just them is submitted;
    # still one line per id.
    again = subprocess.run(_cli(str(inp), "--model", f"openai:{MODEL}", "--provider-batch", "--output", str(out),
                                "--base-url", server.url, "--poll-interval", "0"),
                           env=_env(), capture_output=True, text=True, timeout=120)
    assert again.returncode in (0, 1), again.stderr
    assert server.submissions == before + 2
    assert sorted(_lines(out)) == ["a", "b", "c", "d"] and len(out.read_text().splitlines()) == 4
    assert _lines(out)["a"] == a and _lines(out)["b"] == b


def test_tool_calls_run_here_and_the_next_step_is_the_next_round(server: BatchServer, tmp_path: Path) -> None:
    server.hold.clear()
    (tmp_path / "batch_weather.py").write_text(
        "def get_weather(city: str) -> str:\n    \"\"\"Weather in a city.\"\"\"\n    return f'sunny in {city}'\n")
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_inputs(inp, {"w": "weather in Paris?", "p": "Capital of Peru?"})
    before = server.submissions
    proc = subprocess.run(_cli(str(inp), "--model", f"openai:{MODEL}", "--provider-batch", "--output", str(out),
                               "--base-url", server.url, "--poll-interval", "0", "--tool", "batch_weather:get_weather"),
                          env={**_env(), "PYTHONPATH": str(tmp_path)}, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert server.submissions == before + 2  # round 1: both; round 2: the conversation with a tool call
    first, second = server.uploads[-2], server.uploads[-1]
    assert {e["custom_id"] for e in first} == {"w", "p"} and [e["custom_id"] for e in second] == ["w"]
    assert first[0]["body"]["tools"][0]["function"]["name"] == "get_weather"
    roles = [m["role"] for m in second[0]["body"]["messages"]]
    assert roles == ["user", "assistant", "tool"]
    lines = _lines(out)
    assert lines["w"]["text"] == "Answer: tool said sunny in Paris" and lines["w"]["finish_reason"] == "stop"
    assert lines["w"]["usage"] == {"input_tokens": 20, "output_tokens": 10, "total_tokens": 30}  # both steps
    assert lines["p"]["text"] == "Answer: Capital of Peru?"
    assert not Path(str(out) + ".batch-state.json").exists()


def test_killed_between_rounds_resumes_the_saved_conversations(server: BatchServer, tmp_path: Path) -> None:
    (tmp_path / "batch_weather2.py").write_text(
        "def get_weather(city: str) -> str:\n    \"\"\"Weather in a city.\"\"\"\n    return f'rainy in {city}'\n")
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_inputs(inp, {"w": "weather in Lima?", "q": "Capital of Chile?"})
    state = Path(str(out) + ".batch-state.json")
    server.hold.clear()
    server.hold_tool_rounds.set()
    server.polled.clear()
    before = server.submissions
    args = _cli(str(inp), "--model", f"openai:{MODEL}", "--provider-batch", "--output", str(out),
                "--base-url", server.url, "--poll-interval", "0.01", "--tool", "batch_weather2:get_weather")
    env = {**_env(), "PYTHONPATH": str(tmp_path)}
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert server.polled.wait(60), "the client never polled"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    # Killed while polling the second round: the first round's plain answer is written, the conversation
    # with the tool result is in the state file with the second round's batch id.
    assert server.submissions == before + 2
    assert set(_lines(out)) == {"q"}
    saved = json.loads(state.read_text())
    assert saved["ids"] == ["w"] and saved["batch_id"] is not None
    server.hold_tool_rounds.clear()
    again = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert server.submissions == before + 2
    assert _lines(out)["w"]["text"] == "Answer: tool said rainy in Paris"  # the test server always asks for Paris
    assert not state.exists()


def test_a_failed_batch_gives_every_input_an_error_line(server: BatchServer, tmp_path: Path) -> None:
    server.hold.clear()
    server.hold_tool_rounds.clear()
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_inputs(inp, {"r1": "refuse the batch", "r2": "Capital of France?"})
    proc = subprocess.run(_cli(str(inp), "--model", f"openai:{MODEL}", "--provider-batch", "--output", str(out),
                               "--base-url", server.url, "--poll-interval", "0"),
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    lines = _lines(out)
    assert {k: v["error"]["code"] for k, v in lines.items()} == {"r1": "batch_failed", "r2": "batch_failed"}
    assert "does not exist" in lines["r2"]["error"]["message"]


def test_dry_run_prints_requests_and_cost_and_sends_nothing(server: BatchServer, tmp_path: Path) -> None:
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_inputs(inp, {"a": "Capital of France?", "b": "Capital of Italy?"})
    before = server.submissions
    proc = subprocess.run(_cli(str(inp), "--model", f"openai:{MODEL}", "--provider-batch", "--dry-run",
                               "--output", str(out), "--base-url", server.url),
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    entries = [json.loads(x) for x in proc.stdout.splitlines()]
    assert [e["custom_id"] for e in entries] == ["a", "b"]
    assert entries[0]["body"]["messages"] == [{"role": "user", "content": "Capital of France?"}]
    assert "estimated cost at the batch price" in proc.stderr and "USD" in proc.stderr
    assert server.submissions == before and not out.exists()


def test_killed_while_polling_resumes_the_same_batch(server: BatchServer, tmp_path: Path) -> None:
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_inputs(inp, {"x": "Capital of Spain?", "y": "weather in Paris?"})
    state = Path(str(out) + ".batch-state.json")
    server.hold.set()
    server.polled.clear()
    before = server.submissions
    args = _cli(str(inp), "--model", f"openai:{MODEL}", "--provider-batch", "--output", str(out),
                "--base-url", server.url, "--poll-interval", "0.01")
    proc = subprocess.Popen(args, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        assert server.polled.wait(60), "the client never polled"
        assert state.exists()  # written before the first poll
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert server.submissions == before + 1
    batch_id = json.loads(state.read_text())["batch_id"]
    server.hold.clear()
    again = subprocess.run(args, env=_env(), capture_output=True, text=True, timeout=120)
    assert again.returncode == 0, again.stderr
    assert server.submissions == before + 1  # the same batch, polled again, not submitted twice
    assert server.batches[batch_id]["status"] == "completed"
    lines = _lines(out)
    assert lines["x"]["text"] == "Answer: Capital of Spain?"
    assert lines["y"]["tool_calls"][0]["name"] == "get_weather"
    assert not state.exists()


def test_ctrl_c_while_polling_exits_as_the_batch_command_does(server: BatchServer, tmp_path: Path) -> None:
    from hookstream_batch import EXIT_INTERRUPTED  # the batch command's Ctrl-C status, one for both

    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_inputs(inp, {"z": "Capital of Peru?"})
    server.hold.set()
    server.polled.clear()
    args = _cli(str(inp), "--model", f"openai:{MODEL}", "--provider-batch", "--output", str(out),
                "--base-url", server.url, "--poll-interval", "0.01", "--no-progress")
    proc = subprocess.Popen(args, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        assert server.polled.wait(60), "the client never polled"
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        server.hold.clear()
        if proc.returncode is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == EXIT_INTERRUPTED == 130, err
    assert "the batch stays submitted" in err
    assert Path(str(out) + ".batch-state.json").exists()


def test_a_provider_without_batch_api_is_a_usage_error(tmp_path: Path) -> None:
    inp, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    _write_inputs(inp, {"a": "hi"})
    proc = subprocess.run(_cli(str(inp), "--model", "openai-responses:gpt-4o-mini", "--provider-batch",
                               "--output", str(out), "--base-url", "http://127.0.0.1:9/v1"),
                          env=_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert "has no batch API" in proc.stderr
