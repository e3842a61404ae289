"""Files in, sources and files out, for both OpenAI providers, through a real loopback server.

Request shapes follow the OpenAI API reference and guides: Chat Completions "Create chat completion"
user content parts (``image_url``, ``input_audio``, ``file`` with ``file_data``; tool messages take text
only, so tool-result images follow in a user message), Responses "Create a model response" input
content (``input_image``, ``input_file``) and function call ``output`` arrays ("string or array of
input_text, input_image, input_file"). Streams here are minimal well-formed answers written for these
tests, except where a recording of ``../shared/provider-streams-external`` is named.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import requests
from hookstream import FilePart, LoopSettings, Message, SourcePart, ToolCallPart, ToolResultPart, chat, get_model
from hookstream.events import parse_custom, to_json
from hookstream.plugin import CallContext, ModelCall, ModelRequest
from hookstream.testing import LoopbackServer, Response, check_events
from hookstream_openai.chat import chat_file_part, chat_messages
from hookstream_openai.responses import responses_file_part, responses_input

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
PDF = b"%PDF-1.4\n%fake but well-typed\n"
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 16
B64 = base64.b64encode

CHAT_OK = (
    b'data: {"id":"chatcmpl-1","model":"gpt-test-2025","choices":[{"index":0,"delta":{"content":"ok"},'
    b'"finish_reason":"stop"}]}\n\n'
    b'data: {"id":"chatcmpl-1","choices":[],"usage":{"prompt_tokens":30,"completion_tokens":1,'
    b'"prompt_tokens_details":{"cached_tokens":12}}}\n\ndata: [DONE]\n\n'
)
RESPONSES_OK = (
    b'data: {"type":"response.output_text.delta","delta":"ok"}\n\n'
    b'data: {"type":"response.completed","response":{"id":"resp_1","model":"gpt-test-2025","status":"completed",'
    b'"usage":{"input_tokens":30,"output_tokens":1,"input_tokens_details":{"cached_tokens":12}}}}\n\n'
)

EXTERNAL = Path(__file__).resolve().parents[3].parent / "shared" / "provider-streams-external"


def conversation() -> list[Message]:
    """A user turn with an image and a PDF, a tool call, and a tool result carrying a screenshot."""
    return [
        Message.user("What is in these?", FilePart.from_bytes(PNG, filename="photo.png"),
                     FilePart.from_bytes(PDF, filename="report.pdf")),
        Message("assistant", [ToolCallPart("call_1", "screenshot", {})]),
        Message("tool", [ToolResultPart("call_1", "screenshot", "taken",
                                        files=[FilePart.from_bytes(PNG, filename="shot.png")])]),
    ]


def body_of(model: str, messages: list[Message], answer: bytes) -> tuple[dict[str, Any], Any]:
    with LoopbackServer([Response(answer)]) as srv:
        provider = get_model(model, base_url=srv.url + "/v1", api_key="sk-test")
        stream = chat(provider, messages, max_steps=1)
        for _ in stream:
            pass
        return srv.requests[0].json(), stream.result()


def test_chat_request_carries_image_pdf_and_tool_result_image() -> None:
    body, result = body_of("openai:gpt-test", conversation(), CHAT_OK)
    png_url = "data:image/png;base64," + B64(PNG).decode()
    assert body["messages"] == [
        {"role": "user", "content": [
            {"type": "text", "text": "What is in these?"},
            {"type": "image_url", "image_url": {"url": png_url}},
            {"type": "file", "file": {"filename": "report.pdf",
                                      "file_data": "data:application/pdf;base64," + B64(PDF).decode()}},
        ]},
        {"role": "assistant", "content": "",
         "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "screenshot", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "taken"},
        {"role": "user", "content": [
            {"type": "text", "text": "Files returned by tool call call_1 (screenshot):"},
            {"type": "image_url", "image_url": {"url": png_url}},
        ]},
    ]
    step = result.steps[0]
    assert (step.response_id, step.model) == ("chatcmpl-1", "gpt-test-2025")
    assert step.usage.cached_input_tokens == 12


def test_chat_audio_and_url_image() -> None:
    msg = Message.user("Listen", FilePart.from_bytes(WAV), FilePart.from_url("https://example.com/a.jpg"))
    body, _ = body_of("openai:gpt-test", [msg], CHAT_OK)
    assert body["messages"][0]["content"][1:] == [
        {"type": "input_audio", "input_audio": {"data": B64(WAV).decode(), "format": "wav"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}},
    ]


def test_responses_request_carries_image_pdf_and_tool_result_image() -> None:
    body, result = body_of("openai-responses:gpt-test", conversation(), RESPONSES_OK)
    png_url = "data:image/png;base64," + B64(PNG).decode()
    assert body["input"] == [
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "What is in these?"},
            {"type": "input_image", "image_url": png_url, "detail": "auto"},
            {"type": "input_file", "filename": "report.pdf",
             "file_data": "data:application/pdf;base64," + B64(PDF).decode()},
        ]},
        {"type": "function_call", "call_id": "call_1", "name": "screenshot", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "taken"},
            {"type": "input_image", "image_url": png_url, "detail": "auto"},
        ]},
    ]
    step = result.steps[0]
    assert (step.response_id, step.model, step.usage.cached_input_tokens) == ("resp_1", "gpt-test-2025", 12)


def test_a_file_kind_the_api_cannot_take_fails_before_sending() -> None:
    with LoopbackServer([Response(RESPONSES_OK)]) as srv:
        provider = get_model("openai-responses:gpt-test", base_url=srv.url + "/v1", api_key="sk-test")
        stream = chat(provider, Message.user("hi", FilePart.from_bytes(WAV)), max_steps=1)
        for _ in stream:
            pass
        assert srv.requests == []
    err = stream.result().error
    assert isinstance(err, ValueError) and "no audio input" in str(err)
    with pytest.raises(ValueError, match="wav or mp3"):
        chat_file_part(FilePart("audio/ogg", data=b"OggS"))


def test_responses_annotations_images_and_provider_items() -> None:
    img = B64(PNG).decode()
    ws = {"id": "ws_1", "type": "web_search_call", "status": "completed",
          "action": {"type": "search", "query": "pydantic"}}
    stream_body = "".join(f"data: {json.dumps(e)}\n\n" for e in [
        {"type": "response.created", "response": {"id": "resp_9", "status": "in_progress"}},
        {"type": "response.web_search_call.searching", "item_id": "ws_1"},
        {"type": "response.output_item.done", "item": ws},
        {"type": "response.output_text.delta", "item_id": "msg_1", "delta": "See docs."},
        {"type": "response.output_text.annotation.added", "item_id": "msg_1", "annotation": {
            "type": "url_citation", "url": "https://docs.example/x", "title": "X", "start_index": 0, "end_index": 8}},
        {"type": "response.output_item.done", "item": {"id": "msg_1", "type": "message", "content": [
            {"type": "output_text", "text": "See docs.", "annotations": [
                {"type": "url_citation", "url": "https://docs.example/x", "title": "X", "start_index": 0,
                 "end_index": 8},
                {"type": "file_citation", "file_id": "file_1", "filename": "notes.pdf", "index": 3}]}]}},
        {"type": "response.output_item.done", "item": {"id": "ig_1", "type": "image_generation_call",
                                                       "status": "completed", "result": img}},
        {"type": "response.brand_new_event", "x": 1},
        {"type": "response.completed", "response": {"id": "resp_9", "model": "gpt-test-2025", "status": "completed"}},
    ]).encode()
    with LoopbackServer([Response(stream_body), Response(RESPONSES_OK)]) as srv:
        provider = get_model("openai-responses:gpt-test", base_url=srv.url + "/v1", api_key="sk-test")
        stream = chat(provider, "find it", max_steps=1, loop=LoopSettings(include_raw=True))
        events = list(stream)
        result = stream.result()
        step = result.steps[0]
        assert [(s.source_type, s.url, s.title) for s in result.sources] == [
            ("url", "https://docs.example/x", "X"), ("document", None, "notes.pdf")]
        assert [f.data for f in result.files] == [PNG]
        assert step.unknown_events == 1
        assert [e.type for e in events].count("RAW") == 1
        finished = next(e for e in events if e.type == "STEP_FINISHED")
        assert (finished.response_id, finished.model, finished.finish_reason) == ("resp_9", "gpt-test-2025", "stop")
        assert [type(p).__name__ for p in step.message.parts] == ["TextPart", "SourcePart", "SourcePart", "FilePart"]
        payloads = [parse_custom(e) for e in events if e.type == "CUSTOM"]
        assert [p.name for p in payloads if p is not None] == ["source", "source", "file"]
        # Next turn: the web search item goes back before the text it preceded, the image as its item.
        again = chat(provider, [*result.messages, Message.user("more")], max_steps=1)
        for _ in again:
            pass
        sent = srv.requests[1].json()["input"]
        assert sent[1] == ws
        assert sent[2] == {"type": "message", "role": "assistant",
                           "content": [{"type": "output_text", "text": "See docs."}]}
        assert sent[3] == {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": img}


def test_responses_provider_items_with_no_message_after_them_make_no_empty_text() -> None:
    # A web search then the end of the response, no message item: the item must still go back on the
    # next turn, without a TEXT_MESSAGE_CONTENT whose delta is empty (AG-UI clients reject it).
    ws = {"id": "ws_2", "type": "web_search_call", "status": "completed",
          "action": {"type": "search", "query": "hookstream"}}
    stream_body = "".join(f"data: {json.dumps(e)}\n\n" for e in [
        {"type": "response.output_item.added", "output_index": 0, "item": {**ws, "status": "in_progress"}},
        {"type": "response.web_search_call.completed", "item_id": "ws_2"},
        {"type": "response.output_item.done", "output_index": 0, "item": ws},
        {"type": "response.completed", "response": {"id": "resp_w", "status": "completed"}},
    ]).encode()
    with LoopbackServer([Response(stream_body), Response(stream_body), Response(RESPONSES_OK)]) as srv:
        provider = get_model("openai-responses:gpt-test", base_url=srv.url + "/v1", api_key="sk-test")
        assert "TEXT_MESSAGE_START" not in [e.type for e in provider_events(provider)]
        stream = chat(provider, "search", max_steps=1)
        events = [json.loads(to_json(e)) for e in stream]
        result = stream.result()
        assert not [e for e in events if e["type"].startswith("TEXT_MESSAGE")]
        (part,) = result.steps[0].message.parts
        assert part.text == "" and part.provider_metadata == {"openai-responses": {"items_before": [ws]}}
        again = chat(provider, [*result.messages, Message.user("more")], max_steps=1)
        for _ in again:
            pass
        # The search goes back as it came, and nothing else stands for the empty assistant turn.
        assert srv.requests[2].json()["input"][1:] == [ws, {"type": "message", "role": "user",
                                                            "content": [{"type": "input_text", "text": "more"}]}]


def test_raw_events_are_counted_but_not_streamed_by_default() -> None:
    body = (b'data: {"object":"chat.completion.chunk.extra","note":1}\n\n' + CHAT_OK)
    with LoopbackServer([Response(body)]) as srv:
        stream = chat(get_model("openai:gpt-test", base_url=srv.url + "/v1", api_key="k"), "hi", max_steps=1)
        types = [e.type for e in stream]
    assert "RAW" not in types
    assert stream.result().steps[0].unknown_events == 1


def test_tool_call_end_carries_input() -> None:
    body = (b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":'
            b'{"name":"f","arguments":"{\\"a\\":"}}]}}]}\n\n'
            b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},'
            b'"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n')
    with LoopbackServer([Response(body), Response(body)]) as srv:
        provider = get_model("openai:gpt-test", base_url=srv.url + "/v1", api_key="k")
        adapter_ends = [e for e in provider_events(provider) if e.type == "TOOL_CALL_END"]
        stream = chat(provider, "hi", max_steps=1)
        ends = [e for e in stream if e.type == "TOOL_CALL_END"]
    # The adapter leaves the streamed text to its consumers; the engine hands them its one joined string,
    # the step result shares it, and the wire form carries the parsed object.
    assert [e.input for e in adapter_ends] == [None]
    assert [e.arguments for e in ends] == ['{"a":1}']
    assert ends[0].arguments is stream.result().steps[0].tool_calls[0].arguments_raw
    assert [json.loads(to_json(e))["input"] for e in ends] == [{"a": 1}]
    assert stream.result().steps[0].tool_calls[0].arguments == {"a": 1}


def provider_events(provider: Any) -> list[Any]:
    """The adapter-form events of one call (grammar checked)."""
    with requests.Session() as session:
        events = list(ModelCall(provider, ModelRequest("gpt-test", [Message.user("x")]), CallContext("t", "r"),
                                session))
    check_events(events, form="call")
    return events


def test_openrouter_annotations_become_sources() -> None:
    path = EXTERNAL / "openai-chat__pydantic-ai__openrouter-web-annotations.sse"
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing")
        pytest.skip(f"{path} is absent (the shared corpus is not checked out)")
    with LoopbackServer([Response(path.read_bytes())]) as srv:
        stream = chat(get_model("openai:m", base_url=srv.url + "/v1", api_key="k"), "hi", max_steps=1)
        for _ in stream:
            pass
    result = stream.result()
    assert [s.url for s in result.sources] == [
        "https://github.com/pydantic/pydantic-ai", "https://pydantic.dev/pydantic-ai",
        "https://github.com/pydantic/pydantic-ai/releases/tag/v2.0.0", "https://pydantic.dev/docs/ai/overview/",
        "https://github.com/pydantic/pydantic-ai/tree/refs/tags/v1.44.0"]
    assert result.sources[0].title == "AI Agent Framework, the Pydantic way - GitHub"
    assert result.text.startswith("The URL for Pydantic AI")
    assert isinstance(result.steps[0].message.parts[0], SourcePart)
    # Sources are not sent back to Chat Completions (it has no input form for them).
    assert chat_messages([result.steps[0].message]) == [{"role": "assistant", "content": result.text}]


@pytest.mark.parametrize("provider", ["openai", "openai-responses"])
def test_cli_attach_end_to_end(tmp_path: Path, provider: str) -> None:
    photo = tmp_path / "photo.png"
    photo.write_bytes(PNG)
    report = tmp_path / "report.pdf"
    report.write_bytes(PDF)
    answer = CHAT_OK if provider == "openai" else RESPONSES_OK
    with LoopbackServer([Response(answer)]) as srv:
        proc = subprocess.run(
            [sys.executable, "-m", "hookstream", "chat", "describe", "--attach", str(photo), "--attach", str(report),
             "--model", f"{provider}:m", "--base-url", srv.url + "/v1", "--output", "final-json"],
            capture_output=True, text=True, env={**os.environ, "OPENAI_API_KEY": "sk-test", "NO_COLOR": "1"},
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        sent = srv.requests[0].json()
    png_url = "data:image/png;base64," + B64(PNG).decode()
    pdf_url = "data:application/pdf;base64," + B64(PDF).decode()
    if provider == "openai":
        assert sent["messages"] == [{"role": "user", "content": [
            {"type": "text", "text": "describe"},
            {"type": "image_url", "image_url": {"url": png_url}},
            {"type": "file", "file": {"filename": "report.pdf", "file_data": pdf_url}}]}]
    else:
        assert sent["input"] == [{"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "describe"},
            {"type": "input_image", "image_url": png_url, "detail": "auto"},
            {"type": "input_file", "filename": "report.pdf", "file_data": pdf_url}]}]
    out = json.loads(proc.stdout)
    assert out["text"] == "ok" and out["sources"] == []


def test_cli_attach_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "hookstream", "chat", "describe", "--attach",
                           str(tmp_path / "nope.png"), "--model", "openai:m", "--base-url", "http://127.0.0.1:9/v1"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 2 and "--attach" in proc.stderr


def test_text_document_is_inlined_and_unknown_document_refused() -> None:
    note = FilePart.from_bytes(b"hello", media_type="text/plain")
    assert chat_file_part(note) == {"type": "text", "text": "hello"}
    assert responses_file_part(note) == {"type": "input_text", "text": "hello"}
    with pytest.raises(ValueError, match="PDF or text"):
        chat_file_part(FilePart("application/zip", data=b"PK"))


def test_provider_executed_items_go_back_in_stream_order() -> None:
    path = EXTERNAL / "openai-responses__pydantic-ai__mcp-server-tool.sse"
    if not path.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{path} is missing")
        pytest.skip(f"{path} is absent (the shared corpus is not checked out)")
    with LoopbackServer([Response(path.read_bytes())]) as srv:
        stream = chat(get_model("openai-responses:m", base_url=srv.url + "/v1", api_key="k"), "hi", max_steps=1)
        for _ in stream:
            pass
    result = stream.result()
    assert result.steps[0].unknown_events == 0
    _, items = responses_input(result.messages)
    # The recording's output items: mcp_list_tools, reasoning, mcp_call, reasoning, message.
    assert [i["type"] for i in items[1:]] == ["mcp_list_tools", "reasoning", "mcp_call", "reasoning", "message"]
    assert items[3]["id"].startswith("mcp_") and items[3]["status"] == "completed"
