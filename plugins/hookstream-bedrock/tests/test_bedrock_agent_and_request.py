"""The agent loop over scripted ConverseStream frames (two tool calls, then a second step), and the
request body the provider builds (Converse "Message" / "ContentBlock" shapes)."""

from __future__ import annotations

import base64
import json

import pytest
from bedrock_frames import MEDIA_TYPE, MODEL, message_start, reasoning, stop, text, tool_use
from hookstream import FilePart, Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart, chat, get_model
from hookstream.plugin import ModelRequest, OutputFormat, ToolSpec
from hookstream.testing import LoopbackServer, Response, check_events

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_two_tool_calls_then_a_second_step() -> None:
    step1 = (message_start()
             + reasoning(0, "sig-abc", "I should ", "add twice.")
             + text(1, "Adding.")
             + tool_use(2, "tooluse_1", "add", '{"a": ', "2, ", '"b": 3}')
             + tool_use(3, "tooluse_2", "add", '{"a": 10, "b": 20}')
             + stop("tool_use", (30, 12)))
    step2 = message_start() + text(0, "5 and ", "30.") + stop("end_turn", (60, 4))
    with LoopbackServer([Response(step1, content_type=MEDIA_TYPE, fragment=(1, 11)),
                         Response(step2, content_type=MEDIA_TYPE, fragment=(1, 11))]) as srv:
        model = get_model(f"bedrock:{MODEL}", base_url=srv.url, api_key="bedrock-api-key-test", region="us-east-1")
        stream = chat(model, "2+3 and 10+20?", tools=[add], system="Use the tool.")
        events = check_events(list(stream), form="run")
        result = stream.result()
        first, second = (r.json() for r in srv.requests)
    assert result.text.endswith("5 and 30.")
    assert [e.tool_call_name for e in events if e.type == "TOOL_CALL_START"] == ["add", "add"]
    assert [json.loads(e.content) for e in events if e.type == "TOOL_CALL_RESULT"] == [5, 30]
    assert result.usage.input_tokens == 90 and result.usage.output_tokens == 16
    assert first["system"] == [{"text": "Use the tool."}]
    assert first["toolConfig"]["tools"][0]["toolSpec"]["name"] == "add"
    assert first["toolConfig"]["tools"][0]["toolSpec"]["inputSchema"]["json"]["properties"]["a"]["type"] == "integer"
    assistant, results = second["messages"][1], second["messages"][2]
    assert assistant == {"role": "assistant", "content": [
        {"reasoningContent": {"reasoningText": {"text": "I should add twice.", "signature": "sig-abc"}}},
        {"text": "Adding."},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "add", "input": {"a": 2, "b": 3}}},
        {"toolUse": {"toolUseId": "tooluse_2", "name": "add", "input": {"a": 10, "b": 20}}},
    ]}
    assert results == {"role": "user", "content": [
        {"toolResult": {"toolUseId": "tooluse_1", "content": [{"text": "5"}], "status": "success"}},
        {"toolResult": {"toolUseId": "tooluse_2", "content": [{"text": "30"}], "status": "success"}},
    ]}


def test_every_tool_call_with_arguments_streams_them() -> None:
    body = message_start() + tool_use(0, "t1", "add", "", '{"a":1,"b":2}') + stop("tool_use")
    with LoopbackServer([Response(body, content_type=MEDIA_TYPE),
                         Response(message_start() + text(0, "3") + stop("end_turn"), content_type=MEDIA_TYPE)]) as srv:
        model = get_model(f"bedrock:{MODEL}", base_url=srv.url, api_key="k-test", region="us-east-1")
        events = list(chat(model, "1+2", tools=[add]))
    assert [e.delta for e in events if e.type == "TOOL_CALL_ARGS"] == ['{"a":1,"b":2}']


def build(request: ModelRequest) -> tuple[str, dict[str, object]]:
    provider = get_model(f"bedrock:{request.model}", api_key="k-test", region="us-west-2")
    http = provider.build_request(request)
    return http.url, http.json


def test_url_quotes_the_model_id() -> None:
    url, _ = build(ModelRequest("arn:aws:bedrock:us-west-2:123:inference-profile/us.amazon.nova-lite-v1:0",
                                [Message.user("hi")]))
    assert url == ("https://bedrock-runtime.us-west-2.amazonaws.com/model/"
                   "arn%3Aaws%3Abedrock%3Aus-west-2%3A123%3Ainference-profile%2Fus.amazon.nova-lite-v1%3A0/converse-stream")


def test_files_options_and_tool_choice() -> None:
    user = Message("user", [TextPart("look", provider_metadata={"bedrock": {"cache_point": True}}),
                            FilePart("image/png", data=PNG),
                            FilePart("application/pdf", data=b"%PDF-1.4", filename="Q3 report (final).pdf")])
    request = ModelRequest(MODEL, [user], tools=[ToolSpec("add", "Add.")], tool_choice={"name": "add"},
                           max_tokens=100, temperature=0.2,
                           options={"topP": 0.9, "thinking": {"type": "enabled", "budget_tokens": 1024},
                                    "guardrailConfig": {"guardrailIdentifier": "g1", "guardrailVersion": "1"}})
    _, body = build(request)
    content = body["messages"][0]["content"]  # type: ignore[index]
    assert content == [
        {"text": "look"},
        {"cachePoint": {"type": "default"}},
        {"image": {"format": "png", "source": {"bytes": base64.b64encode(PNG).decode()}}},
        {"document": {"format": "pdf", "name": "Q3 report (final)",
                      "source": {"bytes": base64.b64encode(b"%PDF-1.4").decode()}}},
    ]
    assert body["inferenceConfig"] == {"maxTokens": 100, "temperature": 0.2, "topP": 0.9}
    assert body["additionalModelRequestFields"] == {"thinking": {"type": "enabled", "budget_tokens": 1024}}
    assert body["guardrailConfig"] == {"guardrailIdentifier": "g1", "guardrailVersion": "1"}
    assert body["toolConfig"] == {"tools": [{"toolSpec": {"name": "add", "description": "Add.", "inputSchema": {
        "json": {"type": "object", "properties": {}}}}}], "toolChoice": {"tool": {"name": "add"}}}


@pytest.mark.parametrize("file", [FilePart("audio/wav", data=b"RIFF0000WAVE"), FilePart.from_url("https://x.test/a.png")])
def test_files_converse_cannot_take_are_refused_before_sending(file: FilePart) -> None:
    with pytest.raises(ValueError):
        build(ModelRequest(MODEL, [Message("user", [file])]))


def test_reasoning_round_trip_rules_and_tool_choice_none() -> None:
    assistant = Message("assistant", [
        ReasoningPart("signed", provider_metadata={"bedrock": {"signature": "s1"}}),
        ReasoningPart("", provider_metadata={"bedrock": {"redacted_content": "UkVE"}}),
        ReasoningPart("from elsewhere", provider_metadata={"anthropic": {"signature": "x"}}),
        ToolCallPart("t1", "add", {"a": 1, "b": 2}),
        ToolCallPart("t2", "add", None, arguments_raw='{"a": '),  # cut off, unanswered: left out
    ])
    tool = Message("tool", [ToolResultPart("t1", "add", "boom", is_error=True)])
    _, body = build(ModelRequest(MODEL, [Message.user("hi"), assistant, tool, Message.user("again")],
                                 tools=[ToolSpec("add")], tool_choice="none"))
    messages = body["messages"]
    assert messages[1]["content"] == [  # type: ignore[index]
        {"reasoningContent": {"reasoningText": {"text": "signed", "signature": "s1"}}},
        {"reasoningContent": {"redactedContent": "UkVE"}},
        {"toolUse": {"toolUseId": "t1", "name": "add", "input": {"a": 1, "b": 2}}},
    ]
    assert messages[2]["content"] == [  # type: ignore[index]
        {"toolResult": {"toolUseId": "t1", "content": [{"text": "boom"}], "status": "error"}},
        {"text": "again"},
    ]
    # "none" has no Converse form: the tools stay (tool blocks in history need toolConfig), no toolChoice.
    assert "toolChoice" not in body["toolConfig"]  # type: ignore[operator]
    _, plain = build(ModelRequest(MODEL, [Message.user("hi")], tools=[ToolSpec("add")], tool_choice="none"))
    assert "toolConfig" not in plain


def test_structured_output_is_a_forced_tool() -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    _, body = build(ModelRequest(MODEL, [Message.user("hi")], output=OutputFormat("final", schema)))
    assert body["toolConfig"] == {"tools": [{"toolSpec": {
        "name": "final", "description": "Give the final answer with this tool: its input is the answer.",
        "inputSchema": {"json": schema}}}], "toolChoice": {"tool": {"name": "final"}}}


def test_structured_output_through_the_loop() -> None:
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
    body = message_start() + tool_use(0, "t1", "output", '{"answer": ', '"42"}') + stop("tool_use")
    with LoopbackServer([Response(body, content_type=MEDIA_TYPE)]) as srv:
        model = get_model(f"bedrock:{MODEL}", base_url=srv.url, api_key="k-test", region="us-east-1")
        stream = chat(model, "q", output=schema)
        list(stream)
        assert stream.result().output == {"answer": "42"}
        assert srv.requests[0].json()["toolConfig"]["toolChoice"] == {"tool": {"name": "output"}}
