"""Files in, sources and files out, in the core: tool results with files, content-list messages, the
``source``/``file`` CUSTOM payloads, RAW events, STEP_FINISHED details, the UI model and AG-UI input."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hookstream import (
    FilePart,
    FileUIPart,
    LoopSettings,
    Message,
    SourcePart,
    SourceUIPart,
    StreamProcessor,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    UIMessage,
    chat,
    final_json,
    get_model,
    model_messages_to_ui_messages,
    tool,
    ui_messages_to_model_messages,
)
from hookstream.errors import AGUIInputError, MalformedCustomEventError
from hookstream.events import (
    Custom,
    FilePayload,
    Raw,
    RunFinished,
    SourcePayload,
    StepFinished,
    TextMessageContent,
    TextMessageStart,
    Usage,
    from_json,
    parse_custom,
    to_json,
)
from hookstream.plugin import StepAccumulator, ToolCallRequest, coerce_messages, run_request
from hookstream.server import messages_from_agui
from hookstream.testing import LoopbackServer, Response

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
PDF = b"%PDF-1.7\n"
SOURCE = SourcePart("src_1", "url", url="https://example.com/a", title="A", cited_text="quoted", start_index=0,
                    end_index=6)


# -- tools returning files -------------------------------------------------------------------------


def test_a_tool_returning_files_gives_a_result_with_files() -> None:
    shot = FilePart.from_bytes(PNG)

    @tool
    def screenshot() -> Any:
        """Take a screenshot."""
        return shot

    @tool
    def mixed() -> Any:
        """Text and a picture."""
        return ["caption", shot, {"w": 1}]

    alone = run_request(ToolCallRequest.of(screenshot, ToolCallPart("c1", "screenshot", {})))
    assert (alone.output, alone.files, alone.is_error) == ("", [shot], False)
    both = run_request(ToolCallRequest.of(mixed, ToolCallPart("c2", "mixed", {})))
    assert (both.output, both.files) == (["caption", {"w": 1}], [shot])


def test_tool_errors_are_unchanged() -> None:
    @tool
    def broken() -> Any:
        """Fails."""
        raise RuntimeError("no screen")

    result = run_request(ToolCallRequest.of(broken, ToolCallPart("c1", "broken", {})))
    assert result.is_error and result.files == [] and "no screen" in result.output


# -- messages in -----------------------------------------------------------------------------------


def test_coerce_messages_reads_openai_content_lists() -> None:
    b64 = base64.b64encode(PNG).decode()
    [msg] = coerce_messages([{"role": "user", "content": [
        "hi ",
        {"type": "text", "text": "there"},
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64}"}},
        {"type": "image_url", "image_url": {"url": "https://example.com/b.jpg"}},
        {"type": "input_audio", "input_audio": {"data": base64.b64encode(b"ID3xx").decode(), "format": "mp3"}},
        {"type": "file", "file": {"filename": "r.pdf", "file_data": "data:application/pdf;base64,"
                                  + base64.b64encode(PDF).decode()}},
        FilePart.from_bytes(PDF),
    ]}])
    assert msg.text == "hi there"
    files = msg.files
    assert [(f.media_type, f.data, f.url) for f in files[:3]] == [
        ("image/png", PNG, None), ("image/jpeg", None, "https://example.com/b.jpg"), ("audio/mpeg", b"ID3xx", None)]
    assert (files[3].filename, files[3].data) == ("r.pdf", PDF)
    assert Message.user("x", files[4]).parts == [TextPart("x"), files[4]]


@pytest.mark.parametrize("content", [
    [{"type": "image_url"}],
    [{"type": "file", "file": {"file_id": "file-1"}}],
    [{"type": "video", "video": {}}],
])
def test_coerce_messages_rejects_what_it_cannot_read(content: list[Any]) -> None:
    with pytest.raises(ValueError, match="content part"):
        coerce_messages([{"role": "user", "content": content}])


def test_files_only_in_user_messages() -> None:
    with pytest.raises(ValueError, match="cannot hold files"):
        coerce_messages([{"role": "system", "content": [FilePart.from_bytes(PNG)]}])


# -- CUSTOM payloads, RAW, STEP_FINISHED --------------------------------------------------------------


def test_source_and_file_payloads_round_trip_through_json() -> None:
    for payload in (SourcePayload(SOURCE), FilePayload(FilePart.from_bytes(PNG, filename="p.png"))):
        event = from_json(to_json(payload.to_event()))
        assert parse_custom(event) == payload
    assert SourcePayload(SOURCE).to_value() == {"id": "src_1", "sourceType": "url", "url": "https://example.com/a",
                                                "title": "A", "citedText": "quoted", "startIndex": 0, "endIndex": 6}
    assert FilePayload(FilePart("image/png", url="https://x/y.png")).to_value() == {
        "mediaType": "image/png", "url": "https://x/y.png"}


@pytest.mark.parametrize("name,value", [
    ("source", {"id": "s"}),
    ("source", {"id": "s", "sourceType": "book"}),
    ("file", {"mediaType": "image/png"}),
    ("file", {"mediaType": "image/png", "data": "!!notbase64"}),
])
def test_malformed_source_and_file_payloads(name: str, value: Any) -> None:
    with pytest.raises(MalformedCustomEventError):
        parse_custom(Custom(name, value))


def test_accumulator_folds_sources_files_raw_and_response_details() -> None:
    acc = StepAccumulator(1)
    image = FilePart.from_bytes(PNG)
    for ev in [TextMessageStart("m1"), TextMessageContent("m1", "Hi"), SourcePayload(SOURCE).to_event(),
               TextMessageContent("m1", "!"), FilePayload(image).to_event(), Raw({"type": "x.new"}, source="p"),
               Custom("source", {"bad": 1}),
               RunFinished("t", "r", Usage(1, 2, cache_write_tokens=4), "stop", "stop", response_id="resp_1",
                           model="m-2025")]:
        acc.add(ev)
    step = acc.result
    assert step.text == "Hi!"
    assert step.message.parts == [TextPart("Hi!"), SOURCE, image]
    assert (step.sources, step.files, step.unknown_events) == ([SOURCE], [image], 2)
    assert (step.response_id, step.model, step.usage and step.usage.cache_write_tokens) == ("resp_1", "m-2025", 4)
    assert final_json(step)["sources"] == [{"sourceType": "url", "url": "https://example.com/a", "title": "A",
                                           "citedText": "quoted", "startIndex": 0, "endIndex": 6,
                                           "documentIndex": None}]


def test_raw_and_step_finished_wire_form() -> None:
    assert json.loads(to_json(Raw({"a": 1}, source="openai"))) == {"type": "RAW", "event": {"a": 1},
                                                                     "source": "openai"}
    ev = StepFinished("step-1", response_id="r1", model="m", usage=Usage(3, 4), finish_reason="stop")
    assert json.loads(to_json(ev)) == {"type": "STEP_FINISHED", "stepName": "step-1", "responseId": "r1", "model": "m",
                                       "usage": [{"inputTokens": 3, "outputTokens": 4}], "finishReason": "stop"}
    assert from_json(to_json(ev)) == ev
    assert (Usage(1, cache_write_tokens=2) + Usage(1, cache_write_tokens=3)).cache_write_tokens == 5
    usage_wire = json.loads(to_json(RunFinished("t", "r", usage=Usage(9, 1, cached_input_tokens=2,
                                                                       cache_write_tokens=3))))["usage"]
    assert usage_wire == [{"inputTokens": 9, "outputTokens": 1, "cachedInputTokens": 2, "cacheWriteInputTokens": 3}]


# -- the engine -------------------------------------------------------------------------------------


def _chat_body(*chunks: dict[str, Any]) -> bytes:
    return b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"


def test_engine_step_details_include_raw_and_tool_result_files() -> None:
    pytest.importorskip("hookstream_openai", reason="the engine test speaks OpenAI Chat Completions")
    shot = FilePart.from_bytes(PNG)

    @tool
    def screenshot() -> Any:
        """Take a screenshot."""
        return ["the screen", shot]

    call = _chat_body(
        {"id": "chatcmpl-1", "model": "m-1", "choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "c1", "function": {"name": "screenshot", "arguments": "{}"}}]}}]},
        {"object": "mystery"},
        {"id": "chatcmpl-1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}],
         "usage": {"prompt_tokens": 5, "completion_tokens": 1}},
    )
    answer = _chat_body({"id": "chatcmpl-2", "model": "m-1", "choices": [
        {"index": 0, "delta": {"content": "A cat."}, "finish_reason": "stop"}]})
    with LoopbackServer([Response(call), Response(answer)]) as srv:
        provider = get_model("openai:m", base_url=srv.url + "/v1", api_key="k")
        stream = chat(provider, "look", tools=[screenshot], loop=LoopSettings(include_raw=True))
        events = list(stream)
        second = srv.requests[1].json()["messages"]
    result = stream.result()
    assert [e.type for e in events].count("RAW") == 1
    finished = [e for e in events if isinstance(e, StepFinished)]
    assert [(e.response_id, e.model, e.finish_reason) for e in finished] == [
        ("chatcmpl-1", "m-1", "tool_calls"), ("chatcmpl-2", "m-1", "stop")]
    assert finished[0].usage == Usage(5, 1)
    assert [(s.response_id, s.unknown_events) for s in result.steps] == [("chatcmpl-1", 1), ("chatcmpl-2", 0)]
    assert result.tool_results[0].files == [shot]
    [res] = [e for e in events if e.type == "TOOL_CALL_RESULT"]
    assert res.files == [{"mediaType": "image/png", "data": base64.b64encode(PNG).decode()}]
    proc = StreamProcessor()
    proc.process(from_json(to_json(e)) for e in events)
    [ui_result] = [p for p in proc.messages[-1].parts if p.type == "tool-result"]
    assert ui_result.files == [FileUIPart("image/png", shot.data_url())]
    assert second[-2] == {"role": "tool", "tool_call_id": "c1", "content": "the screen"}
    assert second[-1]["role"] == "user" and second[-1]["content"][1]["type"] == "image_url"


# -- UI model -----------------------------------------------------------------------------------------


def test_processor_builds_source_and_file_ui_parts_without_splitting_text() -> None:
    proc = StreamProcessor()
    image = FilePart.from_bytes(PNG, filename="gen.png")
    proc.process([TextMessageStart("m1"), TextMessageContent("m1", "See "), SourcePayload(SOURCE).to_event(),
                  TextMessageContent("m1", "this."), FilePayload(image).to_event()])
    [msg] = proc.messages
    assert msg.text == "See this."
    kinds = [p.type for p in msg.parts]
    assert kinds == ["text", "source-url", "file"]
    assert msg.parts[2] == FileUIPart("image/png", image.data_url(), "gen.png")


def test_ui_parts_json_and_model_round_trip() -> None:
    shot = FilePart.from_bytes(PNG, filename="s.png")
    doc = SourcePart("src_2", "document", title="Report", document_index=0, cited_text="x")
    messages = [
        Message.user("what is this", FilePart.from_bytes(PDF, filename="r.pdf"), FilePart.from_url("https://x/y.png")),
        Message("assistant", [TextPart("It is"), SOURCE, doc, ToolCallPart("c1", "shot", {}, "{}")]),
        Message("tool", [ToolResultPart("c1", "shot", "ok", files=[shot])]),
        Message("assistant", [TextPart("done"), FilePart.from_bytes(PNG, filename="gen.png")]),
    ]
    ui = model_messages_to_ui_messages(messages)
    again = [UIMessage.from_dict(json.loads(json.dumps(m.to_dict()))) for m in ui]
    assert again == ui
    assert ui_messages_to_model_messages(again) == messages
    dumped = [p for m in ui for p in m.to_dict()["parts"]]
    assert {"type": "source-url", "sourceId": "src_1", "url": "https://example.com/a", "title": "A",
            "citedText": "quoted", "startIndex": 0, "endIndex": 6} in dumped
    assert {"type": "file", "mediaType": "image/png", "url": "https://x/y.png"} in dumped
    assert isinstance(ui[1].parts[2], SourceUIPart) and ui[1].parts[2].type == "source-document"


# -- AG-UI input ----------------------------------------------------------------------------------------


def test_agui_binary_content_becomes_file_parts() -> None:
    b64 = base64.b64encode(PNG).decode()
    [msg] = messages_from_agui([{"id": "u1", "role": "user", "content": [
        {"type": "text", "text": "describe"},
        {"type": "binary", "mimeType": "image/png", "data": b64, "filename": "p.png"},
        {"type": "binary", "mimeType": "application/pdf", "url": "https://example.com/r.pdf"},
        {"type": "image", "source": {"type": "data", "value": b64, "mimeType": "image/png"}},
    ]}])
    assert msg.text == "describe"
    assert [(f.media_type, f.data, f.url, f.filename) for f in msg.files] == [
        ("image/png", PNG, None, "p.png"), ("application/pdf", None, "https://example.com/r.pdf", None),
        ("image/png", PNG, None, None)]


def test_agui_media_parts_are_what_the_official_model_accepts() -> None:
    ag_ui = pytest.importorskip("ag_ui.core", reason="ag-ui-protocol validates the AG-UI shapes")
    b64 = base64.b64encode(PNG).decode()
    # The browser page's form (app.js addUserMessage) and a document by URL, both spec/1.0 media parts.
    message = {"id": "u1", "role": "user", "content": [
        {"type": "text", "text": "describe"},
        {"type": "image", "source": {"type": "data", "value": b64, "mimeType": "image/png"}},
        {"type": "document", "source": {"type": "url", "value": "https://example.com/r.pdf",
                                        "mimeType": "application/pdf"}},
    ]}
    ag_ui.UserMessage.model_validate(message)
    [msg] = messages_from_agui([message])
    assert [(f.media_type, f.data, f.url) for f in msg.files] == [
        ("image/png", PNG, None), ("application/pdf", None, "https://example.com/r.pdf")]
    with pytest.raises(AGUIInputError, match="handle"):
        messages_from_agui([{"id": "u2", "role": "user", "content": [
            {"type": "image", "source": {"type": "file", "value": "file-abc", "mimeType": "image/png"}}]}])


@pytest.mark.parametrize("part", [
    {"type": "binary", "mimeType": "image/png", "id": "upload-1"},
    {"type": "binary", "mimeType": "image/png", "data": "%%%"},
    {"type": "binary", "mimeType": "image/png", "url": "ftp://x"},
    {"type": "weird"},
])
def test_agui_bad_binary_content_is_an_input_error(part: dict[str, Any]) -> None:
    with pytest.raises(AGUIInputError, match=r"messages\[0\]"):
        messages_from_agui([{"id": "u1", "role": "user", "content": [{"type": "text", "text": "x"}, part]}])
