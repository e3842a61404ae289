"""The ``ollama`` provider on real recorded ``/api/chat`` NDJSON bodies (``recordings/``, SOURCES.md),
through a real loopback HTTP server; the official ``ollama`` client is the oracle for both the
stream (it reads the same bytes) and the request (it posts to a server that records it)."""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path
from typing import Any

import hookstream
import pytest
from hookstream import FilePart, Message, ToolCallPart, ToolResultPart, chat, get_model
from hookstream.plugin import NDJSON, ModelRequest, ToolSpec
from hookstream.testing import LoopbackServer, Response, check_events
from hookstream.testing.conformance import Recording, check_recording, recordings
from hookstream.testing.recorded import replay_body
from hookstream_ollama.provider import host_url
from hookstream_ollama.request import build_body

HERE = Path(__file__).resolve().parent
RECORDINGS = recordings(HERE / "recordings", ("ollama",))
NDJSON_TYPE = "application/x-ndjson"


def _ids(rec: Recording) -> str:
    return rec.name


def _body(name: str) -> bytes:
    return (HERE / "recordings" / f"{name}.ndjson").read_bytes()


def test_at_least_eight_recordings() -> None:
    assert len(RECORDINGS) >= 8


@pytest.mark.parametrize("rec", RECORDINGS, ids=_ids)
def test_recording_whole(rec: Recording) -> None:
    assert check_recording("ollama", rec) == []


@pytest.mark.parametrize("seed", (1, 7, 42))
@pytest.mark.parametrize("rec", RECORDINGS, ids=_ids)
def test_recording_split_at_random_bytes(rec: Recording, seed: int) -> None:
    assert check_recording("ollama", rec, fragment=(1, 23), seed=seed) == []


@pytest.mark.parametrize("split", ("bytes", "lines", "events"))
def test_one_byte_line_or_event_per_read(split: str) -> None:
    rec = next(r for r in RECORDINGS if "tool_calls_two" in r.name)
    events, step = replay_body("ollama", rec.body_path.read_bytes(), split=split)
    check_events(events, form="call")
    assert [c.name for c in step.tool_calls] == [c["name"] for c in rec.expected["tool_calls"]]


def _oracle(body: bytes) -> dict[str, Any]:
    """What the official ``ollama`` client reduces from the same bytes over loopback HTTP."""
    ollama = pytest.importorskip("ollama")
    text, thinking, calls = [], [], []
    last: Any = None
    with LoopbackServer([Response(body, content_type=NDJSON_TYPE, fragment=(1, 50))], seed=3) as srv:
        for part in ollama.Client(host=srv.url).chat(model="m", messages=[{"role": "user", "content": "x"}],
                                                     stream=True):
            text.append(part.message.content or "")
            thinking.append(part.message.thinking or "")
            calls += [{"name": c.function.name, "arguments": dict(c.function.arguments)}
                      for c in part.message.tool_calls or ()]
            last = part
    return {"text": "".join(text), "thinking": "".join(thinking) or None, "tool_calls": calls,
            "finish_reason": last.done_reason, "usage": (last.prompt_eval_count, last.eval_count)}


@pytest.mark.parametrize("rec", RECORDINGS, ids=_ids)
def test_same_result_as_the_ollama_client(rec: Recording) -> None:
    body = rec.body_path.read_bytes()
    want = _oracle(body)
    _, step = replay_body("ollama", body, fragment=(1, 31), seed=5)
    got = hookstream.final_json(step)
    assert got["text"] == want["text"]
    assert (got.get("thinking") or None) == want["thinking"]
    assert [{"name": c["name"], "arguments": c["arguments"]} for c in got["tool_calls"]] == want["tool_calls"]
    assert got["raw_finish_reason"] == want["finish_reason"]
    assert (got["usage"]["input_tokens"], got["usage"]["output_tokens"]) == want["usage"]


def test_request_matches_the_ollama_client() -> None:
    """The official client and hookstream post the same body for the same call (messages with an image,
    an assistant tool call and its result, tools, options, keep_alive, think)."""
    ollama = pytest.importorskip("ollama")
    image = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
    tool = {"type": "function", "function": {"name": "add", "description": "Add two numbers.", "parameters": {
        "type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}
    client_messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is in this image, and 2+3?", "images": [image]},
        {"role": "assistant", "content": "",
         "tool_calls": [{"function": {"name": "add", "arguments": {"a": 2, "b": 3}}}]},
        {"role": "tool", "content": "5", "tool_name": "add"},
    ]
    done = _body("ollama__openllmetry__llama3_text_joke")
    with LoopbackServer([Response(done, content_type=NDJSON_TYPE)] * 2) as srv:
        list(ollama.Client(host=srv.url).chat(model="llama3.2", messages=client_messages, tools=[tool], stream=True,
                                              options={"num_predict": 50, "temperature": 0.2, "num_ctx": 4096},
                                              keep_alive="10m", think=False))
        messages = [
            Message.system("Be brief."),
            Message("user", [hookstream.TextPart("What is in this image, and 2+3?"),
                             FilePart.from_bytes(image, media_type="image/png")]),
            Message("assistant", [ToolCallPart("call_1", "add", {"a": 2, "b": 3})]),
            Message("tool", [ToolResultPart("call_1", "add", 5)]),
        ]
        request = ModelRequest(model="llama3.2", messages=messages,
                               tools=[ToolSpec("add", "Add two numbers.", tool["function"]["parameters"])],  # type: ignore[index]
                               max_tokens=50, temperature=0.2,
                               options={"keep_alive": "10m", "think": False, "options": {"num_ctx": 4096}})
        with get_model("ollama:llama3.2", base_url=srv.url) as model:
            for _ in chat(model, messages, max_steps=1):
                pass
        sent_by_client, _ = srv.requests[0].json(), srv.requests[1]
    assert srv.requests[0].path == srv.requests[1].path == "/api/chat"
    ours = build_body(request, "llama3.2")
    assert ours == sent_by_client, [(a, b) for a, b in zip(ours["messages"], sent_by_client["messages"],
                                                            strict=True) if a != b]
    assert sent_by_client["messages"][1]["images"] == [base64.b64encode(image).decode()]


def test_agent_loop_two_tool_calls_then_a_second_step() -> None:
    """Step 1 replays a recorded answer with two tool calls (Qwen 3), the engine runs both tools, and
    step 2 (a recorded text answer) ends the run; the second request carries the calls and results."""
    calls_body = _body("ollama__prism__qwen3-14b_tool_calls_two")
    text_body = _body("ollama__prism__granite3-dense_text")
    first = [json.loads(line) for line in calls_body.splitlines() if line.strip()]
    names = [c["function"]["name"] for line in first for c in line["message"].get("tool_calls") or ()]
    ran: list[str] = []
    lock = threading.Lock()

    def make(name: str) -> Any:
        def fn(**kwargs: Any) -> dict[str, Any]:
            with lock:
                ran.append(name)
            return {"ok": name, "args": kwargs}
        return hookstream.Tool(name, name, {"type": "object", "additionalProperties": True}, fn)

    tools = [make(n) for n in dict.fromkeys(names)]
    with LoopbackServer([Response(calls_body, content_type=NDJSON_TYPE, fragment=(1, 40)),
                         Response(text_body, content_type=NDJSON_TYPE)]) as srv:
        stream = chat(get_model("ollama:qwen3:14b", base_url=srv.url), "go", tools=tools)
        events = list(stream)
        second = srv.requests[1].json()
    check_events(events, form="run")
    result = stream.result()
    assert result.error is None
    assert sorted(ran) == sorted(names) and len(ran) == 2
    roles = [m["role"] for m in second["messages"]]
    assert roles == ["user", "assistant", "tool", "tool"]
    assert [c["function"]["name"] for c in second["messages"][1]["tool_calls"]] == names
    assert result.text == "".join(json.loads(x)["message"]["content"] for x in text_body.splitlines() if x.strip())


def test_error_line_mid_stream_keeps_what_arrived() -> None:
    """Fault injection (not a recording): a real text body cut after three lines, then Ollama's
    documented mid-stream error line ``{"error": ...}``."""
    lines = _body("ollama__openllmetry__llama3_text_joke").splitlines(keepends=True)
    body = b"".join(lines[:3]) + b'{"error":"an error was encountered while running the model"}\n'
    events, step = replay_body("ollama", body, fragment=(1, 9), seed=2)
    check_events(events, form="call")
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "ollama_error"
    assert step.text == "".join(json.loads(x)["message"]["content"] for x in lines[:3])


def test_truncated_line_is_malformed_and_keeps_what_arrived() -> None:
    lines = _body("ollama__openllmetry__llama3_text_joke").splitlines(keepends=True)
    body = b"".join(lines[:4]) + b'{"model":"llama3","mess'
    events, step = replay_body("ollama", body)
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "malformed_chunk"
    assert step.text == "".join(json.loads(x)["message"]["content"] for x in lines[:4])


def test_line_over_the_limit_is_refused() -> None:
    from hookstream.plugin import CallOptions

    body = _body("ollama__openllmetry__llama3_text_joke")
    events, _ = replay_body("ollama", body, options=CallOptions(max_event_bytes=64))
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "line_too_long"


def test_http_error_body_is_read() -> None:
    with LoopbackServer([Response(b'{"error":"model \\"nope\\" not found, try pulling it first"}', status=404,
                                  content_type="application/json")]) as srv:
        result = chat(get_model("ollama:nope", base_url=srv.url), "hi").result()
    assert result.error is not None
    assert "not found" in str(result.error)


@pytest.mark.parametrize(("host", "url"), [
    (None, "http://127.0.0.1:11434"), ("", "http://127.0.0.1:11434"), ("example:1234", "http://example:1234"),
    ("0.0.0.0", "http://0.0.0.0:11434"), ("https://ollama.example", "https://ollama.example"),
    ("http://10.0.0.2:8080/", "http://10.0.0.2:8080"),
])
def test_ollama_host(host: str | None, url: str) -> None:
    assert host_url(host) == url


def test_base_url_from_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:11500")
    assert get_model("ollama:llama3").base_url == "http://gpu-box:11500"


def test_framing_is_ndjson_and_url_images_are_refused() -> None:
    model = get_model("ollama:llava")
    assert model.framing is NDJSON
    with pytest.raises(ValueError, match="bytes, not by URL"):
        build_body(ModelRequest(model="llava", messages=[
            Message("user", [FilePart.from_url("https://example.com/cat.png", media_type="image/png")])]), "llava")


def test_hookstream_replay_cli_reads_ndjson() -> None:
    """``hookstream replay FILE --provider ollama`` serves the body with the framing's media type."""
    import subprocess
    import sys

    rec = next(r for r in RECORDINGS if "gpt-oss_thinking" in r.name)
    proc = subprocess.run([sys.executable, "-m", "hookstream", "replay", str(rec.body_path), "--provider", "ollama",
                           "--output", "final-json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    assert got["text"] == rec.expected["text"] and got["thinking"] == rec.expected["thinking"]


def test_nothing_listening_says_to_start_ollama() -> None:
    # A port bound and held, never listening: nothing answers there, as on a machine where Ollama is not
    # running (released, another process could start listening on it before the request).
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        model = get_model("ollama:llama3.2", base_url=f"http://127.0.0.1:{port}")
        result = chat(model, "hi", loop=hookstream.LoopSettings(max_retries=0)).result()
    assert result.error is not None and result.error.code == "connect_error"
    assert "is Ollama running?" in str(result.error)
